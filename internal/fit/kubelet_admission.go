package fit

import (
	"fmt"
	"runtime"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// Rejection is why the kubelet's admission refuses a pod bound to its node:
// the pod's status reason ("OutOfcpu", "NodePorts", ...) and message.
type Rejection struct {
	Reason, Message string
}

// AdmitBound checks a pod bound to node without the scheduler (created with
// spec.nodeName) as the kubelet's admission does (pkg/kubelet/lifecycle's
// predicate admit handler over kube-scheduler's AdmissionCheck): the OS
// (AdmitOS), resources, required node affinity, host ports, then NoExecute
// taints only, since a
// pod placed by name is not the scheduler's to keep off NoSchedule nodes.
// It returns the first failure in that order, worded as the kubelet words
// it, or nil when the pod is admitted. Importing the kubelet's handler
// would link kube-scheduler whole into the API server's pod path; this
// follows it on berth's own accounting record instead.
func AdmitBound(pod *v1.Pod, node *v1.Node, used Usage) *Rejection {
	if r := AdmitOS(pod, nodeOS(node)); r != nil {
		return r
	}
	p := NewPod(pod)
	if short := p.shortfalls(Allocatable(node), used); len(short) > 0 {
		r := short[0]
		return &Rejection{
			Reason: "OutOf" + string(r.name),
			Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
				r.name, r.want, r.used, r.have),
		}
	}
	if ok, _ := p.affinity.Match(node); !ok {
		return predicateFailed("NodeAffinity", reasonAffinity)
	}
	if p.portsTaken(used) {
		return predicateFailed("NodePorts", reasonPortsTaken)
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }, false); untolerated {
		return predicateFailed("TaintToleration", "node(s) had taints that the pod didn't tolerate")
	}
	return nil
}

// The kubelet's reasons for a pod meant for another operating system.
const (
	reasonOSLabel = "PodOSSelectorNodeLabelDoesNotMatch"
	reasonOSField = "PodOSNotSupported"
)

// AdmitOS refuses a pod meant for another operating system than nodeOS,
// with the kubelet's first two admission checks (the predicate admit
// handler's, which upstream keeps unexported), in its order and words: a
// pod labelled kubernetes.io/os (its labels, not its node selector, as the
// kubelet reads them) for another OS, then a pod whose spec.os names another.
func AdmitOS(pod *v1.Pod, nodeOS string) *Rejection {
	if os, ok := pod.Labels[v1.LabelOSStable]; ok && os != nodeOS {
		return &Rejection{Reason: reasonOSLabel, Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != nodeOS {
		return &Rejection{Reason: reasonOSField, Message: "Failed to admit pod as the OS field doesn't match node OS"}
	}
	return nil
}

// nodeOS is the operating system of node's agent: its kubernetes.io/os
// label, which agents set from the OS they run on, or this process's.
func nodeOS(node *v1.Node) string {
	if os := node.Labels[v1.LabelOSStable]; os != "" {
		return os
	}
	return runtime.GOOS
}

// predicateFailed words a failed predicate as the kubelet's PredicateFailureError.
func predicateFailed(name, desc string) *Rejection {
	return &Rejection{Reason: name, Message: fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// Status is the pod status the kubelet's rejectPod writes for r: Failed,
// the reason, "Pod was rejected: " and the message, the pod's QoS class,
// and only the scheduler's condition kept (the kubelet's status manager
// keeps conditions it does not own).
func (r Rejection) Status(pod *v1.Pod) v1.PodStatus {
	status := v1.PodStatus{
		QOSClass: pod.Status.QOSClass,
		Phase:    v1.PodFailed,
		Reason:   r.Reason,
		Message:  "Pod was rejected: " + r.Message,
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled {
			status.Conditions = append(status.Conditions, c)
		}
	}
	return status
}
