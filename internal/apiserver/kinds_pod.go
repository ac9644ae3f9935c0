package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// podRules are what berth's own code asks of pods beyond upstream's pod
// registry strategy, which prepares, defaults and validates them: the field
// selectors its readers index.
func podRules() kindRules {
	return kindRules{fields: podFields}
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
