package apiserver

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	// The admissionregistration group's internal types, defaults and
	// conversions in the legacy scheme, which its registry strategies use.
	admissionregistrationapi "k8s.io/kubernetes/pkg/apis/admissionregistration"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingwebhookconfiguration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingwebhookconfiguration"
)

// admissionRegistrationResources is what berth serves of
// admissionregistration.k8s.io/v1: the webhook configurations, defaulted and
// validated by upstream's registry strategies, which upstream's webhook
// admission plugins in berth server call (internal/server). The admission
// policy kinds are not served: a policy stored but not enforced would let
// through what its author meant to refuse.
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
	}
}
