package apiserver

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	// The networking group's internal types, defaults and conversions in
	// the legacy scheme, which its registry strategies use.
	networkingapi "k8s.io/kubernetes/pkg/apis/networking"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	"k8s.io/kubernetes/pkg/registry/networking/ingress"
	"k8s.io/kubernetes/pkg/registry/networking/ingressclass"
	"k8s.io/kubernetes/pkg/registry/networking/ipaddress"
	"k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	"k8s.io/kubernetes/pkg/registry/networking/servicecidr"
)

// networkingResources is networking.k8s.io/v1, each kind defaulted and
// validated by upstream's registry strategy and stored under upstream's
// key. berth stores them for the controllers and charts that use them:
// it runs no ingress controller, enforces no NetworkPolicy (as clusters
// whose network plugin does not), and allocates Services' cluster IPs from
// its service range rather than from ServiceCIDR objects (the server keeps
// the default ServiceCIDR, which names that range).
func networkingResources() []*resource {
	networking := networkingv1.SchemeGroupVersion
	return []*resource{
		{
			gvr: networking.WithResource("ingresses"), kind: "Ingress", singular: "ingress", shortNames: []string{"ing"}, namespaced: true,
			newObj: newOf[networkingv1.Ingress](), newList: newOf[networkingv1.IngressList](),
			registry: &registryKind{strategy: ingress.Strategy, newInternal: func() runtime.Object { return &networkingapi.Ingress{} },
				subresources: map[string]upstreamStrategy{"status": ingress.StatusStrategy}},
			subresources: []string{"status"},
			storagePath:  "ingress",
		},
		{
			gvr: networking.WithResource("ingressclasses"), kind: "IngressClass", singular: "ingressclass",
			newObj: newOf[networkingv1.IngressClass](), newList: newOf[networkingv1.IngressClassList](),
			registry: &registryKind{strategy: ingressclass.Strategy, newInternal: func() runtime.Object { return &networkingapi.IngressClass{} }},
		},
		{
			gvr: networking.WithResource("networkpolicies"), kind: "NetworkPolicy", singular: "networkpolicy", shortNames: []string{"netpol"}, namespaced: true,
			newObj: newOf[networkingv1.NetworkPolicy](), newList: newOf[networkingv1.NetworkPolicyList](),
			registry: &registryKind{strategy: networkpolicy.Strategy, newInternal: func() runtime.Object { return &networkingapi.NetworkPolicy{} }},
		},
		{
			gvr: networking.WithResource("ipaddresses"), kind: "IPAddress", singular: "ipaddress", shortNames: []string{"ip"},
			newObj: newOf[networkingv1.IPAddress](), newList: newOf[networkingv1.IPAddressList](),
			registry: &registryKind{strategy: ipaddress.Strategy, newInternal: func() runtime.Object { return &networkingapi.IPAddress{} }},
		},
		{
			gvr: networking.WithResource("servicecidrs"), kind: "ServiceCIDR", singular: "servicecidr",
			newObj: newOf[networkingv1.ServiceCIDR](), newList: newOf[networkingv1.ServiceCIDRList](),
			registry: &registryKind{strategy: servicecidr.Strategy, newInternal: func() runtime.Object { return &networkingapi.ServiceCIDR{} },
				subresources: map[string]upstreamStrategy{"status": servicecidr.StatusStrategy}},
			subresources: []string{"status"},
		},
	}
}
