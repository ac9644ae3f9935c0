package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// What kube-apiserver's Priority admission plugin adds to a pod, before the
// pod registry's own defaults and validation (upstream's) run: berth does
// not serve the PriorityClasses that plugin reads yet. (The ServiceAccount
// plugin is upstream's own, in the server's admission chain.)

func admitPodDefaults(obj runtime.Object) {
	spec := &obj.(*corev1.Pod).Spec
	if spec.Priority == nil && spec.PriorityClassName == "" {
		spec.Priority = ptr.To[int32](0)
	}
	if spec.PreemptionPolicy == nil {
		spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	}
}
