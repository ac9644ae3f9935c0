package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/berth/berth/internal/fit"
)

// preemption is a node where pod fits once victims, pods of lower
// priority, are gone.
type preemption struct {
	node    string
	victims []*v1.Pod
}

// priorityOf is a pod's priority; a pod admitted without one has 0.
func priorityOf(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// mayPreempt reports whether pod may evict others to fit, as
// kube-scheduler's DefaultPreemption decides: not with preemptionPolicy
// Never, and not while lower-priority pods it already evicted on its
// nominated node are still terminating (they free the room it needs).
func mayPreempt(pod *v1.Pod, nodes nodeList) bool {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false
	}
	nominated := pod.Status.NominatedNodeName
	if nominated == "" {
		return true
	}
	for i := range nodes.Len() {
		n := nodes.At(i)
		if n.node.Node.Name != nominated {
			continue
		}
		for _, p := range n.pods {
			if p.DeletionTimestamp != nil && priorityOf(p) < priorityOf(pod) {
				return false
			}
		}
	}
	return true
}

// findPreemption picks the node where pod fits by evicting the least, as
// kube-scheduler's DefaultPreemption: on each node every pod of lower
// priority that is not already terminating is a candidate; if pod fits
// without all of them, the most important candidates (highest priority,
// then longest running) are kept back one by one while it still fits, and
// the rest are the victims. Of the nodes, the one whose most important
// victim has the lowest priority wins, then the lowest sum of victims'
// priorities, then the fewest victims, then the name. Topology spread and
// inter-pod affinity are judged with the victims still counted, so
// preemption does not evict pods to satisfy those.
func findPreemption(pod *v1.Pod, nodes nodeList, checks podChecks) (preemption, bool) {
	prepared := fit.NewPod(pod)
	var best preemption
	var bestRank victimRank
	for i := range nodes.Len() {
		n := nodes.At(i)
		victims, ok := victimsOn(pod, prepared, checks, n)
		if !ok {
			continue
		}
		rank := rankVictims(victims)
		if best.node == "" || rank.less(bestRank) || (rank == bestRank && n.node.Node.Name < best.node) {
			best, bestRank = preemption{node: n.node.Node.Name, victims: victims}, rank
		}
	}
	return best, best.node != ""
}

// victimsOn returns the fewest, least important pods whose eviction lets
// pod fit on n, or false if no eviction does.
func victimsOn(pod *v1.Pod, prepared *fit.Pod, checks podChecks, n nodeView) ([]*v1.Pod, bool) {
	var candidates []*v1.Pod
	for _, p := range n.pods {
		if p.DeletionTimestamp == nil && priorityOf(p) < priorityOf(pod) {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return nil, false
	}
	for _, p := range candidates {
		n.usage = n.usage.Remove(p)
	}
	if len(filter(pod, prepared, checks, n)) > 0 {
		return nil, false
	}
	slices.SortFunc(candidates, moreImportant)
	var victims []*v1.Pod
	for _, p := range candidates {
		kept := n
		kept.usage = n.usage.Add(p)
		if len(filter(pod, prepared, checks, kept)) == 0 {
			n = kept // reprieved: pod fits with it still there
			continue
		}
		victims = append(victims, p)
	}
	return victims, true
}

// moreImportant orders pods most important first: higher priority, then
// the one started earlier, as upstream's MoreImportantPod.
func moreImportant(a, b *v1.Pod) int {
	if c := cmp.Compare(priorityOf(b), priorityOf(a)); c != 0 {
		return c
	}
	return startTime(a).Compare(startTime(b).Time)
}

func startTime(p *v1.Pod) metav1.Time {
	if p.Status.StartTime != nil {
		return *p.Status.StartTime
	}
	return p.CreationTimestamp
}

// victimRank compares preemptions: lower is better.
type victimRank struct {
	highest int32
	sum     int64
	count   int
}

func rankVictims(victims []*v1.Pod) victimRank {
	r := victimRank{highest: priorityOf(victims[0]), count: len(victims)}
	for _, v := range victims {
		r.highest = max(r.highest, priorityOf(v))
		r.sum += int64(priorityOf(v))
	}
	return r
}

func (r victimRank) less(o victimRank) bool {
	if r.highest != o.highest {
		return r.highest < o.highest
	}
	if r.sum != o.sum {
		return r.sum < o.sum
	}
	return r.count < o.count
}

// preempt evicts the victims as kube-scheduler does: each gets the
// DisruptionTarget condition (reason PreemptionByScheduler) and a
// Preempted event, then is deleted with its own grace period; the
// preemptor is nominated to the node, where it is bound once they are gone.
func (s *Scheduler) preempt(ctx context.Context, key string, pod *v1.Pod, p preemption) {
	for _, victim := range p.victims {
		callCtx, cancel := context.WithTimeout(ctx, apiCallTimeout)
		err := s.evict(callCtx, victim, pod)
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			s.log.Warn("preempting a pod", "pod", key, "victim", victim.Namespace+"/"+victim.Name, "err", err)
			return
		}
		s.recorder.Eventf(victim, pod, v1.EventTypeNormal, "Preempted", "Preempting",
			fmt.Sprintf("Preempted by pod %s on node %s", pod.UID, p.node))
	}
	callCtx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	status := corev1apply.Pod(pod.Name, pod.Namespace).WithStatus(corev1apply.PodStatus().WithNominatedNodeName(p.node))
	if _, err := s.cfg.Client.CoreV1().Pods(pod.Namespace).ApplyStatus(callCtx, status, metav1.ApplyOptions{FieldManager: s.cfg.Name, Force: true}); err != nil &&
		!apierrors.IsNotFound(err) {
		s.log.Warn("nominating a node", "pod", key, "node", p.node, "err", err)
	}
}

// evict marks victim as a disruption target and deletes it.
func (s *Scheduler) evict(ctx context.Context, victim, preemptor *v1.Pod) error {
	condition := corev1apply.PodCondition().WithType(v1.DisruptionTarget).WithStatus(v1.ConditionTrue).
		WithReason(v1.PodReasonPreemptionByScheduler).WithLastTransitionTime(metav1.Now()).
		WithMessage(fmt.Sprintf("%s: preempting to accommodate a higher priority pod", s.cfg.Name))
	status := corev1apply.Pod(victim.Name, victim.Namespace).WithStatus(corev1apply.PodStatus().WithConditions(condition))
	if _, err := s.cfg.Client.CoreV1().Pods(victim.Namespace).ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: s.cfg.Name, Force: true}); err != nil {
		return fmt.Errorf("marking %s/%s a disruption target: %w", victim.Namespace, victim.Name, err)
	}
	err := s.cfg.Client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name,
		metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(victim.UID))})
	if err != nil {
		return fmt.Errorf("deleting %s/%s: %w", victim.Namespace, victim.Name, err)
	}
	return nil
}
