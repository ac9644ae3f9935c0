package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
)

// volumeResources are PersistentVolumes and PersistentVolumeClaims, each
// prepared and validated by upstream's registry strategy.
func volumeResources() []*resource {
	core := corev1.SchemeGroupVersion
	newPV := func() runtime.Object { return &api.PersistentVolume{} }
	newPVC := func() runtime.Object { return &api.PersistentVolumeClaim{} }
	return []*resource{
		{
			gvr: core.WithResource("persistentvolumes"), kind: "PersistentVolume", singular: "persistentvolume", shortNames: []string{"pv"},
			newObj: newOf[corev1.PersistentVolume](), newList: newOf[corev1.PersistentVolumeList](),
			rules: kindRules{fields: upstreamFields(newPV, persistentvolume.GetAttrs)},
			registry: &registryKind{strategy: persistentvolume.Strategy, newInternal: newPV,
				subresources: map[string]upstreamStrategy{"status": persistentvolume.StatusStrategy}},
			subresources: []string{"status"},
		},
		{
			gvr: core.WithResource("persistentvolumeclaims"), kind: "PersistentVolumeClaim", singular: "persistentvolumeclaim",
			shortNames: []string{"pvc"}, namespaced: true,
			newObj: newOf[corev1.PersistentVolumeClaim](), newList: newOf[corev1.PersistentVolumeClaimList](),
			rules: kindRules{fields: upstreamFields(newPVC, persistentvolumeclaim.GetAttrs)},
			registry: &registryKind{strategy: persistentvolumeclaim.Strategy, newInternal: newPVC,
				subresources: map[string]upstreamStrategy{"status": persistentvolumeclaim.StatusStrategy}},
			subresources: []string{"status"},
		},
	}
}
