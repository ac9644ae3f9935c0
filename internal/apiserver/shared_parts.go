package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth/berth/internal/partshare"
	"github.com/berth/berth/internal/store"
)

// maxSharedParts bounds each table of shared parts: a few thousand distinct
// containers or field sets, whose encodings (the keys) take ~1 MB at most.
const maxSharedParts = 4096

// decodeSharingParts wraps a watch cache's decode so that the objects the
// cache keeps share their equal parts (internal/partshare): every kind's
// labels, annotations and managed field sets, and the pod parts that pods of one template have in
// common. Bench/api's pods decode to 4.2 KB each, 2.6 KB with their parts
// shared. Reads from the store are not wrapped: they are not kept.
func decodeSharingParts(decode func(store.KV) (runtime.Object, error)) func(store.KV) (runtime.Object, error) {
	fieldSets := partshare.NewTable[*metav1.FieldsV1](maxSharedParts)
	labels := partshare.NewTable[map[string]string](maxSharedParts)
	annotations := partshare.NewTable[map[string]string](maxSharedParts)
	pods := newPodParts()
	return func(kv store.KV) (runtime.Object, error) {
		obj, err := decode(kv)
		if err != nil {
			return nil, err
		}
		if acc, err := meta.Accessor(obj); err == nil {
			acc.SetLabels(partshare.Map(labels, acc.GetLabels()))
			acc.SetAnnotations(partshare.Map(annotations, acc.GetAnnotations()))
			entries := acc.GetManagedFields() // the object's own slice
			for i := range entries {
				entries[i].FieldsV1 = partshare.Pointer(fieldSets, entries[i].FieldsV1)
			}
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			pods.share(&pod.Spec)
		}
		return obj, nil
	}
}

// podParts are the tables of the pod spec's parts that a template fixes.
type podParts struct {
	containers  *partshare.Table[[]corev1.Container]
	tolerations *partshare.Table[[]corev1.Toleration]
	volumes     *partshare.Table[[]corev1.Volume]
	security    *partshare.Table[*corev1.PodSecurityContext]
	affinity    *partshare.Table[*corev1.Affinity]
}

func newPodParts() podParts {
	return podParts{
		containers:  partshare.NewTable[[]corev1.Container](maxSharedParts),
		tolerations: partshare.NewTable[[]corev1.Toleration](maxSharedParts),
		volumes:     partshare.NewTable[[]corev1.Volume](maxSharedParts),
		security:    partshare.NewTable[*corev1.PodSecurityContext](maxSharedParts),
		affinity:    partshare.NewTable[*corev1.Affinity](maxSharedParts),
	}
}

func (p podParts) share(spec *corev1.PodSpec) {
	spec.InitContainers = partshare.Slice(p.containers, spec.InitContainers)
	spec.Containers = partshare.Slice(p.containers, spec.Containers)
	spec.Tolerations = partshare.Slice(p.tolerations, spec.Tolerations)
	spec.Volumes = partshare.Slice(p.volumes, spec.Volumes)
	spec.SecurityContext = partshare.Pointer(p.security, spec.SecurityContext)
	spec.Affinity = partshare.Pointer(p.affinity, spec.Affinity)
}
