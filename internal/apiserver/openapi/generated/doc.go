// Package generated holds the OpenAPI definitions of every API type berth
// serves, generated from the k8s.io/api Go types (and the apimachinery types
// they use) by kube-openapi's openapi-gen, exactly as kube-apiserver's are.
// The list of input packages must cover every group in
// discovery.Default/RBAC/Authorization, discovery.k8s.io and the API server's read-only empty
// collections (internal/apiserver/empty_collections.go), and the packages
// their types refer to (batch/v1 Jobs name scheduling/v1alpha3 types);
// regenerate after changing it or after bumping k8s.io/api:
//
//	go generate ./internal/apiserver/openapi/generated
//
// The generator is run at the kube-openapi version go.mod already uses
// (`go list -m k8s.io/kube-openapi`), so definitions and the builder agree.
package generated

//go:generate go run k8s.io/kube-openapi/cmd/openapi-gen@v0.0.0-20260721132016-d427ff9ee9ad --output-dir . --output-pkg github.com/berth/berth/internal/apiserver/openapi/generated --output-file zz_generated.openapi.go --go-header-file /dev/null --report-filename /dev/null k8s.io/api/core/v1 k8s.io/api/events/v1 k8s.io/api/coordination/v1 k8s.io/api/certificates/v1 k8s.io/api/rbac/v1 k8s.io/api/authorization/v1 k8s.io/api/authentication/v1 k8s.io/api/policy/v1 k8s.io/api/autoscaling/v1 k8s.io/api/autoscaling/v2 k8s.io/api/apps/v1 k8s.io/api/batch/v1 k8s.io/api/scheduling/v1alpha3 k8s.io/api/storage/v1 k8s.io/api/resource/v1 k8s.io/api/discovery/v1 k8s.io/api/node/v1 k8s.io/api/networking/v1 k8s.io/api/flowcontrol/v1 k8s.io/api/admissionregistration/v1 k8s.io/api/scheduling/v1 k8s.io/api/storagemigration/v1 k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version k8s.io/apimachinery/pkg/util/intstr k8s.io/apimachinery/pkg/api/resource
