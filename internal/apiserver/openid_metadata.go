package apiserver

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	"k8s.io/kubernetes/pkg/routes"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// addOpenIDMetadata serves the service-account issuer's discovery document
// and key set with upstream's handlers (pkg/routes), behind the same
// authentication and authorization as every path: RBAC's
// system:service-account-issuer-discovery role grants them.
func addOpenIDMetadata(mux *http.ServeMux, provider serviceaccount.OpenIDMetadataProvider) {
	container := restful.NewContainer()
	routes.NewOpenIDMetadataServer(provider).Install(container)
	mux.Handle(serviceaccount.OpenIDConfigPath, container)
	mux.Handle(serviceaccount.JWKSPath, container)
}
