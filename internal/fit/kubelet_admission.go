package fit

import (
	"fmt"

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
// predicate admit handler over kube-scheduler's AdmissionCheck): resources,
// required node affinity, host ports, then NoExecute taints only, since a
// pod placed by name is not the scheduler's to keep off NoSchedule nodes.
// It returns the first failure in that order, worded as the kubelet words
// it, or nil when the pod is admitted. Importing the kubelet's handler
// would link kube-scheduler whole into the API server's pod path; this
// follows it on berth's own accounting record instead.
func AdmitBound(pod *v1.Pod, node *v1.Node, used Usage) *Rejection {
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
