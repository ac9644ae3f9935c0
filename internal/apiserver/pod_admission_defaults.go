package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// What kube-apiserver's ServiceAccount and Priority admission plugins add
// to a pod, before the pod registry's own defaults and validation
// (upstream's) run. berth serves neither PriorityClasses nor the service
// account controller those plugins need yet.

func admitPodDefaults(obj runtime.Object) {
	spec := &obj.(*corev1.Pod).Spec
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = "default"
		spec.DeprecatedServiceAccount = "default" //nolint:staticcheck // kept in sync, as upstream's plugin does
	}
	if spec.Priority == nil && spec.PriorityClassName == "" {
		spec.Priority = ptr.To[int32](0)
	}
	if spec.PreemptionPolicy == nil {
		spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	}
}
