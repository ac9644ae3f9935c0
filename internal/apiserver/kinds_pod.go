package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func podRules() kindRules {
	return kindRules{
		hasStatus: true,
		defaults:  func(obj runtime.Object) { defaultPod(obj.(*corev1.Pod)) },
		prepareForCreate: func(_ context.Context, obj runtime.Object) {
			pod := obj.(*corev1.Pod)
			pod.Generation = 1 // agents report status.observedGeneration against it
			pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: podQOSClass(pod)}
		},
		prepareForUpdate: func(obj, old runtime.Object) {
			pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
			if !apiequality.Semantic.DeepEqual(pod.Spec, oldPod.Spec) {
				pod.Generation = oldPod.Generation + 1
			}
		},
		validate: func(obj runtime.Object) field.ErrorList {
			return validatePodSpec(&obj.(*corev1.Pod).Spec, field.NewPath("spec"))
		},
		validateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validatePodSpecUpdate(&obj.(*corev1.Pod).Spec, &old.(*corev1.Pod).Spec, field.NewPath("spec"))
		},
		gracefulDelete: podGracePeriod,
		fields:         podFields,
	}
}

// podGracePeriod decides a pod's deletion grace period as upstream: the
// request's, else the pod's terminationGracePeriodSeconds; zero for a pod no
// node runs (unbound, or already finished), which is then deleted at once.
func podGracePeriod(obj runtime.Object, options *metav1.DeleteOptions) bool {
	pod := obj.(*corev1.Pod)
	var period int64
	switch {
	case options.GracePeriodSeconds != nil:
		period = *options.GracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		period = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		period = 0
	}
	options.GracePeriodSeconds = &period
	return true
}

func podFields(obj runtime.Object) fields.Set {
	pod := obj.(*corev1.Pod)
	hostNetwork := "false"
	if pod.Spec.HostNetwork {
		hostNetwork = "true"
	}
	return fields.Set{
		"metadata.name":            pod.Name,
		"metadata.namespace":       pod.Namespace,
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         hostNetwork,
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             pod.Status.PodIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}
