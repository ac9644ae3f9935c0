// Package admissionpolicystatus runs kube-controller-manager's
// validatingadmissionpolicy-status controller (upstream's own): it type
// checks each ValidatingAdmissionPolicy's CEL expressions against the
// schemas of the kinds the policy matches and writes the result to the
// policy's status.typeChecking, which tools and the policy's author read.
package admissionpolicystatus

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/kubernetes/pkg/controller/validatingadmissionpolicystatus"

	"github.com/berth/berth/internal/apiserver/openapi/generated"
	"github.com/berth/berth/internal/informeropts"
)

// workers is kube-controller-manager's --concurrent-validating-admission-policy-status-syncs default.
const workers = 5

// Run runs the controller as cfg's user until ctx ends. Schemas come from
// the OpenAPI definitions berth serves, then from the API's discovery; kinds
// map to resources through discovery, as kube-controller-manager's do.
func Run(ctx context.Context, cfg *rest.Config) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("admission policy status: %w", err)
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("admission policy status: %w", err)
	}
	schemas := resolver.NewDefinitionsSchemaResolver(generated.GetOpenAPIDefinitions, clientgoscheme.Scheme).
		Combine(&resolver.ClientDiscoveryResolver{Discovery: discoveryClient})
	checker := &validating.TypeChecker{
		SchemaResolver: schemas,
		RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discoveryClient)),
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informeropts.Factory()...)
	policies := factory.Admissionregistration().V1().ValidatingAdmissionPolicies()
	ctrl, err := validatingadmissionpolicystatus.NewController(policies, client.AdmissionregistrationV1().ValidatingAdmissionPolicies(), checker)
	if err != nil {
		return fmt.Errorf("admission policy status: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	ctrl.Run(ctx, workers)
	return nil
}
