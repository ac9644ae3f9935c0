package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/kubernetes/pkg/apis/core"
	discoveryapi "k8s.io/kubernetes/pkg/apis/discovery"
	// The discovery group's internal types, defaults and conversions in the
	// legacy scheme, which upstream's EndpointSlice strategy uses.
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"
	endpointsregistry "k8s.io/kubernetes/pkg/registry/core/endpoint"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/discovery/endpointslice"
)

// serviceResources are Services, Endpoints and EndpointSlices, each
// prepared and validated by upstream's registry strategy. Services also
// allocate cluster IPs and node ports through upstream's service REST hooks
// (service_allocation.go).
func serviceResources() []*resource {
	core := corev1.SchemeGroupVersion
	return []*resource{
		{
			gvr: core.WithResource("services"), kind: "Service", singular: "service", shortNames: []string{"svc"}, namespaced: true,
			storagePath: "services/specs", // kube-apiserver's key
			newObj:      newOf[corev1.Service](), newList: newOf[corev1.ServiceList](),
			rules: kindRules{fields: serviceFields},
			registry: &registryKind{strategy: service.Strategy, newInternal: func() runtime.Object { return &api.Service{} },
				subresources: map[string]upstreamStrategy{"status": service.StatusStrategy}},
			subresources: []string{"status", "proxy"},
			newHooks:     newServiceAllocation,
		},
		{
			gvr: core.WithResource("endpoints"), kind: "Endpoints", singular: "endpoints", shortNames: []string{"ep"}, namespaced: true,
			storagePath: "services/endpoints", // kube-apiserver's key
			//lint:ignore SA1019 kube-apiserver v1.37 still serves core/v1 Endpoints
			newObj: newOf[corev1.Endpoints](), newList: newOf[corev1.EndpointsList](),
			registry: &registryKind{strategy: endpointsregistry.Strategy, newInternal: func() runtime.Object { return &api.Endpoints{} }},
		},
		{
			gvr: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), kind: "EndpointSlice", singular: "endpointslice", namespaced: true,
			newObj: newOf[discoveryv1.EndpointSlice](), newList: newOf[discoveryv1.EndpointSliceList](),
			registry: &registryKind{strategy: endpointslice.Strategy, newInternal: func() runtime.Object { return &discoveryapi.EndpointSlice{} }},
		},
	}
}

// serviceFields are the field selectors upstream's service registry offers
// (pkg/registry/core/service.GetAttrs).
func serviceFields(obj runtime.Object) fields.Set {
	svc := obj.(*corev1.Service)
	return fields.Set{
		"metadata.name":      svc.Name,
		"metadata.namespace": svc.Namespace,
		"spec.clusterIP":     svc.Spec.ClusterIP,
		"spec.type":          string(svc.Spec.Type),
	}
}
