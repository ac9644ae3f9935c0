package apiserver

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	// The admissionregistration group's internal types, defaults and
	// conversions in the legacy scheme, which its registry strategies use.
	admissionregistrationapi "k8s.io/kubernetes/pkg/apis/admissionregistration"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingwebhookconfiguration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicybinding"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingwebhookconfiguration"
)

// admissionRegistrationResources is what berth serves of
// admissionregistration.k8s.io/v1: the webhook configurations and the
// validating admission policies with their bindings, defaulted and
// validated by upstream's registry strategies, which upstream's webhook and
// ValidatingAdmissionPolicy plugins in berth server enforce
// (internal/server). Mutating admission policies are not served: a policy
// stored but not enforced would let through what its author meant to stop.
func admissionRegistrationResources() []*resource {
	admissionregistration := admissionregistrationv1.SchemeGroupVersion
	return []*resource{
		{
			gvr: admissionregistration.WithResource("validatingwebhookconfigurations"), kind: "ValidatingWebhookConfiguration",
			singular: "validatingwebhookconfiguration",
			newObj:   newOf[admissionregistrationv1.ValidatingWebhookConfiguration](), newList: newOf[admissionregistrationv1.ValidatingWebhookConfigurationList](),
			registry: &registryKind{strategy: validatingwebhookconfiguration.Strategy,
				newInternal: func() runtime.Object { return &admissionregistrationapi.ValidatingWebhookConfiguration{} }},
		},
		{
			gvr: admissionregistration.WithResource("mutatingwebhookconfigurations"), kind: "MutatingWebhookConfiguration",
			singular: "mutatingwebhookconfiguration",
			newObj:   newOf[admissionregistrationv1.MutatingWebhookConfiguration](), newList: newOf[admissionregistrationv1.MutatingWebhookConfigurationList](),
			registry: &registryKind{strategy: mutatingwebhookconfiguration.Strategy,
				newInternal: func() runtime.Object { return &admissionregistrationapi.MutatingWebhookConfiguration{} }},
		},
		{
			gvr: admissionregistration.WithResource("validatingadmissionpolicies"), kind: "ValidatingAdmissionPolicy",
			singular: "validatingadmissionpolicy",
			newObj:   newOf[admissionregistrationv1.ValidatingAdmissionPolicy](), newList: newOf[admissionregistrationv1.ValidatingAdmissionPolicyList](),
			registry: &registryKind{newInternal: func() runtime.Object { return &admissionregistrationapi.ValidatingAdmissionPolicy{} },
				withConfig: func(deps strategyDeps) (upstreamStrategy, map[string]upstreamStrategy) {
					s := validatingadmissionpolicy.NewStrategy(deps.authorizer, deps.resolver)
					return s, map[string]upstreamStrategy{"status": validatingadmissionpolicy.NewStatusStrategy(s)}
				}},
			subresources: []string{"status"},
		},
		{
			gvr: admissionregistration.WithResource("validatingadmissionpolicybindings"), kind: "ValidatingAdmissionPolicyBinding",
			singular: "validatingadmissionpolicybinding",
			newObj:   newOf[admissionregistrationv1.ValidatingAdmissionPolicyBinding](), newList: newOf[admissionregistrationv1.ValidatingAdmissionPolicyBindingList](),
			registry: &registryKind{newInternal: func() runtime.Object { return &admissionregistrationapi.ValidatingAdmissionPolicyBinding{} },
				withConfig: func(deps strategyDeps) (upstreamStrategy, map[string]upstreamStrategy) {
					policies := storedPolicies{stores: deps.stores}
					return validatingadmissionpolicybinding.NewStrategy(deps.authorizer, policies, deps.resolver), nil
				}},
		},
	}
}

// storedPolicies is upstream's binding strategy's PolicyGetter over
// berth's store of ValidatingAdmissionPolicies: it checks that the writer
// of a binding may read the policy's parameters.
type storedPolicies struct {
	stores func(schema.GroupVersionResource) *resourceREST
}

func (p storedPolicies) GetValidatingAdmissionPolicy(ctx context.Context, name string) (*admissionregistrationapi.ValidatingAdmissionPolicy, error) {
	policies := p.stores(admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"))
	if policies == nil {
		return nil, fmt.Errorf("validatingadmissionpolicies are not served")
	}
	obj, err := policies.Get(withObjectNamespace(ctx, ""), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	policy := &admissionregistrationapi.ValidatingAdmissionPolicy{}
	if err := legacyscheme.Scheme.Convert(obj, policy, nil); err != nil {
		return nil, err
	}
	return policy, nil
}
