package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/limitrange"
	"k8s.io/kubernetes/pkg/registry/core/resourcequota"
)

// policyResources are the core group's ResourceQuotas and LimitRanges,
// each prepared and validated by upstream's registry strategy. Upstream's
// admission plugins enforce them and its quota controller fills quota
// status.
func policyResources() []*resource {
	core := corev1.SchemeGroupVersion
	return []*resource{
		{
			gvr: core.WithResource("resourcequotas"), kind: "ResourceQuota", singular: "resourcequota", shortNames: []string{"quota"}, namespaced: true,
			newObj: newOf[corev1.ResourceQuota](), newList: newOf[corev1.ResourceQuotaList](),
			registry: &registryKind{strategy: resourcequota.Strategy, newInternal: func() runtime.Object { return &api.ResourceQuota{} },
				subresources: map[string]upstreamStrategy{"status": resourcequota.StatusStrategy}},
			subresources: []string{"status"},
		},
		{
			gvr: core.WithResource("limitranges"), kind: "LimitRange", singular: "limitrange", shortNames: []string{"limits"}, namespaced: true,
			newObj: newOf[corev1.LimitRange](), newList: newOf[corev1.LimitRangeList](),
			registry: &registryKind{strategy: limitrange.Strategy, newInternal: func() runtime.Object { return &api.LimitRange{} }},
		},
	}
}
