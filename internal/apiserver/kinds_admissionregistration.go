package apiserver

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	// The admissionregistration group's internal types, defaults and
	// conversions in the legacy scheme, which its registry strategies use.
	admissionregistrationapi "k8s.io/kubernetes/pkg/apis/admissionregistration"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicybinding"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingwebhookconfiguration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicybinding"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingwebhookconfiguration"
)

// admissionRegistrationResources is admissionregistration.k8s.io/v1: the
// webhook configurations and the validating and mutating admission
// policies with their bindings, defaulted and validated by upstream's
// registry strategies, which upstream's webhook and admission policy
// plugins in berth server enforce (internal/server).
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
					policies := storedPolicies{deps: deps}
					return validatingadmissionpolicybinding.NewStrategy(deps.authorizer, policies, deps.resolver), nil
				}},
		},
		{
			gvr: admissionregistration.WithResource("mutatingadmissionpolicies"), kind: "MutatingAdmissionPolicy",
			singular: "mutatingadmissionpolicy",
			newObj:   newOf[admissionregistrationv1.MutatingAdmissionPolicy](), newList: newOf[admissionregistrationv1.MutatingAdmissionPolicyList](),
			registry: &registryKind{newInternal: func() runtime.Object { return &admissionregistrationapi.MutatingAdmissionPolicy{} },
				withConfig: func(deps strategyDeps) (upstreamStrategy, map[string]upstreamStrategy) {
					return mutatingadmissionpolicy.NewStrategy(deps.authorizer, deps.resolver), nil
				}},
		},
		{
			gvr: admissionregistration.WithResource("mutatingadmissionpolicybindings"), kind: "MutatingAdmissionPolicyBinding",
			singular: "mutatingadmissionpolicybinding",
			newObj:   newOf[admissionregistrationv1.MutatingAdmissionPolicyBinding](), newList: newOf[admissionregistrationv1.MutatingAdmissionPolicyBindingList](),
			registry: &registryKind{newInternal: func() runtime.Object { return &admissionregistrationapi.MutatingAdmissionPolicyBinding{} },
				withConfig: func(deps strategyDeps) (upstreamStrategy, map[string]upstreamStrategy) {
					policies := storedPolicies{deps: deps}
					return mutatingadmissionpolicybinding.NewStrategy(deps.authorizer, policies, deps.resolver), nil
				}},
		},
	}
}

// storedPolicies is upstream's binding strategies' PolicyGetter over
// berth's store of admission policies: they check that the writer of a
// binding may read the policy's parameters.
type storedPolicies struct{ deps strategyDeps }

func (p storedPolicies) GetValidatingAdmissionPolicy(ctx context.Context, name string) (*admissionregistrationapi.ValidatingAdmissionPolicy, error) {
	policy := &admissionregistrationapi.ValidatingAdmissionPolicy{}
	if err := p.get(ctx, "validatingadmissionpolicies", name, policy); err != nil {
		return nil, err
	}
	return policy, nil
}

func (p storedPolicies) GetMutatingAdmissionPolicy(ctx context.Context, name string) (*admissionregistrationapi.MutatingAdmissionPolicy, error) {
	policy := &admissionregistrationapi.MutatingAdmissionPolicy{}
	if err := p.get(ctx, "mutatingadmissionpolicies", name, policy); err != nil {
		return nil, err
	}
	return policy, nil
}

// get reads the policy name of resource into its internal form, into.
func (p storedPolicies) get(ctx context.Context, resource, name string, into runtime.Object) error {
	obj, err := p.deps.getClusterScoped(ctx, admissionregistrationv1.SchemeGroupVersion.WithResource(resource), name)
	if err != nil {
		return err
	}
	return legacyscheme.Scheme.Convert(obj, into, nil)
}
