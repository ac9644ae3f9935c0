package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// What kube-apiserver's default admission plugins add to a pod
// (ServiceAccount's name, Priority, DefaultTolerationSeconds), before the
// pod registry's own defaults and validation (upstream's) run.

const defaultTolerationSeconds = 300

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
	spec.Tolerations = withDefaultTolerations(spec.Tolerations)
}

// withDefaultTolerations adds what the DefaultTolerationSeconds admission
// plugin adds: tolerate not-ready and unreachable nodes for 300s.
func withDefaultTolerations(tolerations []corev1.Toleration) []corev1.Toleration {
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if toleratesNoExecute(tolerations, key) {
			continue
		}
		tolerations = append(tolerations, corev1.Toleration{
			Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptr.To[int64](defaultTolerationSeconds),
		})
	}
	return tolerations
}

func toleratesNoExecute(tolerations []corev1.Toleration, key string) bool {
	for _, t := range tolerations {
		if (t.Key == key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)) &&
			(t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
			return true
		}
	}
	return false
}
