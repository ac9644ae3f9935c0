// Package openapi serves the OpenAPI v2 and v3 documents of berth's API,
// built from the discovery resource list and the definitions generated from
// the k8s.io/api types (package generated). kubectl reads them for
// `kubectl explain`, for client-side validation (v2, protobuf) and to learn
// whether the server validates fields itself (v3).
package openapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/berth/berth/internal/apiserver/discovery"
	"github.com/berth/berth/internal/apiserver/openapi/generated"
	"github.com/berth/berth/internal/version"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Options shape the documents.
type Options struct {
	// ServerSideFieldValidation advertises the fieldValidation query
	// parameter on writes. Set it only when the REST core rejects unknown
	// and duplicate fields for fieldValidation=Strict: kubectl then leaves
	// validation to the server. Unset, kubectl validates against /openapi/v2
	// itself before sending.
	ServerSideFieldValidation bool
	// Version is the documents' info.version, which OpenAPI requires
	// (kube-apiserver puts its git version there); berth's version if empty.
	Version string
}

// Specs are the built documents: one v2 document for everything and one v3
// document per group-version, keyed as /openapi/v3 lists them ("api/v1",
// "apis/coordination.k8s.io/v1").
type Specs struct {
	V2 *spec.Swagger
	V3 map[string]*spec3.OpenAPI
}

// Build describes resources (which should pass discovery.Validate). It fails
// when a resource's kind has no generated definition or a verb has no
// operation, so an unservable list is caught at start-up.
func Build(resources []discovery.Resource, opts Options) (*Specs, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	namer := newDefinitionNamer(scheme)
	paths := pathBuilder{scheme: scheme, fieldValidation: opts.ServerSideFieldValidation}
	if opts.Version == "" {
		opts.Version = version.Version
	}
	info := &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: opts.Version}}

	var containers []common.RouteContainer
	specs := &Specs{V3: map[string]*spec3.OpenAPI{}}
	for _, gv := range groupVersions(resources) {
		c, err := paths.container(gv, resourcesOf(resources, gv))
		if err != nil {
			return nil, fmt.Errorf("describing %s: %w", gv, err)
		}
		containers = append(containers, c)
		v3, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{c}, &common.OpenAPIV3Config{
			Info:                           info,
			GetDefinitions:                 generated.GetOpenAPIDefinitions,
			GetOperationIDAndTagsFromRoute: operationIDAndTags,
			GetDefinitionName:              namer.name,
		})
		if err != nil {
			return nil, fmt.Errorf("building the OpenAPI v3 document of %s: %w", gv, err)
		}
		specs.V3[strings.TrimPrefix(rootPath(gv), "/")] = v3
	}
	specs.V2, err = builder.BuildOpenAPISpecFromRoutes(containers, &common.Config{
		Info:                           info,
		GetDefinitions:                 generated.GetOpenAPIDefinitions,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		GetDefinitionName:              namer.name,
	})
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI v2 document: %w", err)
	}
	return specs, nil
}

// Handler serves /openapi/v2 (JSON or, as kubectl asks, protobuf) and
// /openapi/v3 with its per-group-version documents, through kube-openapi's
// handlers, which do the content negotiation, ETags and hash redirects
// clients expect. Mount it at /openapi/.
func Handler(resources []discovery.Resource, opts Options) (http.Handler, error) {
	specs, err := Build(resources, opts)
	if err != nil {
		return nil, err
	}
	mux := prefixMux{http.NewServeMux()}
	handler.NewOpenAPIService(specs.V2).RegisterOpenAPIVersionedService("/openapi/v2", mux)
	v3 := handler3.NewOpenAPIService()
	for key, doc := range specs.V3 {
		v3.UpdateGroupVersion(key, doc)
	}
	if err := v3.RegisterOpenAPIV3VersionedService("/openapi/v3", mux); err != nil {
		return nil, fmt.Errorf("registering /openapi/v3: %w", err)
	}
	return mux, nil
}

// prefixMux adds the HandlePrefix kube-openapi's v3 handler registers with.
type prefixMux struct{ *http.ServeMux }

func (m prefixMux) HandlePrefix(prefix string, h http.Handler) {
	m.Handle(strings.TrimSuffix(prefix, "/")+"/", h)
}

// groupVersions lists the group-versions of resources in first-seen order.
func groupVersions(resources []discovery.Resource) []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range resources {
		if !seen[r.GroupVersion()] {
			seen[r.GroupVersion()] = true
			out = append(out, r.GroupVersion())
		}
	}
	return out
}

func resourcesOf(resources []discovery.Resource, gv schema.GroupVersion) []discovery.Resource {
	var out []discovery.Resource
	for _, r := range resources {
		if r.GroupVersion() == gv {
			out = append(out, r)
		}
	}
	return out
}
