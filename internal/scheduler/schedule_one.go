package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// followUp is what carries a cycle's outcome out, off the scheduling loop.
type followUp struct {
	// run makes the API calls (a binding, or the record of why the pod
	// fits nowhere); nil means there is nothing to do.
	run func(context.Context)
	// holdsKey keeps the pod's key out of the queue until run returns: a
	// binding must finish (or be undone) before the pod is judged again.
	// Recording an unschedulable pod must not hold it: a cluster change
	// meanwhile has to be able to send the pod round again, however long
	// the write takes.
	holdsKey bool
}

// scheduleOne decides where the delivered pod goes and assumes it there.
func (s *Scheduler) scheduleOne(d delivery) followUp {
	ns, name, err := cache.SplitMetaNamespaceKey(d.key)
	if err != nil {
		s.queue.release(d)
		return followUp{}
	}
	pod, err := s.pods.Pods(ns).Get(name)
	if err != nil || !s.responsibleFor(pod) || s.cache.isAccounted(pod.UID) {
		s.queue.release(d)
		return followUp{}
	}
	if gated(pod) {
		// Not judged at all until its gates are gone; the update that
		// removes the last one brings it back.
		s.queue.release(d)
		return followUp{run: func(ctx context.Context) { s.recordGated(ctx, d.key, pod) }}
	}
	s.offset++
	changes := s.clusterGeneration()
	var dec decision
	var termErr error
	var evict preemption
	s.cache.withNodes(spreadGroup(pod), func(nodes nodeList, placed placedPods) {
		var checks podChecks
		if checks, termErr = preparePodChecks(pod, nodes, placed, s.namespaceLabels); termErr != nil {
			return
		}
		if dec = schedule(pod, nodes, checks, s.offset); dec.node == "" && mayPreempt(pod, nodes) {
			evict, _ = findPreemption(pod, nodes, checks)
		}
	})
	if dec.node == "" {
		msg := dec.message()
		if termErr != nil {
			msg = termErr.Error()
		}
		s.waitForClusterChange(d.key, changes, waitsForPods(pod), msg)
		return followUp{run: func(ctx context.Context) {
			if evict.node != "" {
				s.preempt(ctx, d.key, pod, evict)
			}
			s.recordUnschedulable(ctx, d.key, pod, msg)
		}}
	}
	if !s.cache.assume(pod, dec.node) {
		// The watch reported the pod bound while this cycle decided.
		s.queue.release(d)
		return followUp{}
	}
	return followUp{run: func(ctx context.Context) { s.bind(ctx, d, pod, dec.node) }, holdsKey: true}
}

// errDynamicResources is why a pod with resourceClaims fits nowhere: berth
// allocates no devices, so such a pod waits, as it would under
// kube-scheduler with no DRA driver publishing devices, rather than run
// without what it claims.
var errDynamicResources = errors.New("berth allocates no dynamic resources: pods with resourceClaims are not scheduled")

// preparePodChecks prepares pod's topology spread, inter-pod and node
// preference checks for one cycle.
func preparePodChecks(pod *v1.Pod, nodes nodeList, placed placedPods, nsLabels namespaceLabels) (podChecks, error) {
	if len(pod.Spec.ResourceClaims) > 0 {
		return podChecks{}, errDynamicResources
	}
	spread, err := newSpreadCheck(pod, nodes, placed.all)
	if err != nil {
		return podChecks{}, err
	}
	interPod, err := newInterPodCheck(pod, placed.all, placed.withAffinityTerms, nsLabels)
	if err != nil {
		return podChecks{}, err
	}
	preferences, err := newNodePreferences(pod)
	if err != nil {
		return podChecks{}, err
	}
	return podChecks{spread: spread, interPod: interPod, preferences: preferences}, nil
}

// waitForClusterChange parks a pod that fits nowhere until a cluster event
// (or the periodic retry) may let it fit; if such an event came after the
// cycle read the generation, its retry has passed this pod by, so the pod
// goes round again after its back-off instead. A pod that waitsForPods
// also waits for pods to be placed.
func (s *Scheduler) waitForClusterChange(key string, seen generation, waitsForPods bool, msg string) {
	s.mu.Lock()
	missed := s.clusterChanges != seen.cluster || (waitsForPods && s.podChanges != seen.pods)
	if !missed {
		s.unschedulable[key] = struct{}{}
		if waitsForPods {
			s.podWaiters[key] = struct{}{}
		}
	}
	s.mu.Unlock()
	if missed {
		s.queue.addRateLimited(key)
		return
	}
	s.queue.addAfter(key, unschedulableRetry)
	s.log.Debug("pod unschedulable", "pod", key, "message", msg)
}

// recordUnschedulable tells the pod's owner why it fits nowhere: an event
// and the PodScheduled=False condition, written only if the pod is still
// the one judged (another scheduler may have bound it meanwhile, and that
// binding's PodScheduled=True must not be overwritten).
func (s *Scheduler) recordUnschedulable(ctx context.Context, key string, pod *v1.Pod, msg string) {
	if cond := podCondition(pod, v1.PodScheduled); cond != nil && cond.Reason == v1.PodReasonUnschedulable && cond.Message == msg {
		return // already says so; do not write the same status again
	}
	s.recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", msg)
	callCtx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	err := s.patchScheduledCondition(callCtx, pod, v1.ConditionFalse, v1.PodReasonUnschedulable, msg)
	switch {
	case err == nil, apierrors.IsNotFound(err), ctx.Err() != nil:
	case apierrors.IsConflict(err):
		// The pod changed since it was judged; its update is on its way
		// through the informer and brings it back to the queue if unbound.
		s.log.Debug("pod changed before its unschedulable condition was written", "pod", key)
	default:
		s.log.Warn("recording unschedulable condition", "pod", key, "err", err)
	}
}

// gated reports whether pod waits for its scheduling gates to be removed.
func gated(pod *v1.Pod) bool { return len(pod.Spec.SchedulingGates) > 0 }

// reasonSchedulingGated and its message are kube-scheduler's for a gated pod.
const (
	reasonSchedulingGated  = "SchedulingGated"
	messageSchedulingGated = "Scheduling is blocked due to non-empty scheduling gates"
)

// recordGated tells the pod's owner it waits for its gates, as
// kube-scheduler does: PodScheduled=False, reason SchedulingGated.
func (s *Scheduler) recordGated(ctx context.Context, key string, pod *v1.Pod) {
	if cond := podCondition(pod, v1.PodScheduled); cond != nil && cond.Reason == reasonSchedulingGated {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	err := s.patchScheduledCondition(callCtx, pod, v1.ConditionFalse, reasonSchedulingGated, messageSchedulingGated)
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err), ctx.Err() != nil:
		// A conflict means the pod changed (its gates, say): its update is on its way.
	default:
		s.log.Warn("recording scheduling-gated condition", "pod", key, "err", err)
	}
}

// apiCallTimeout bounds each request that carries out a decision.
const apiCallTimeout = 30 * time.Second

// bind asks the API server to bind pod to node; the server re-checks every
// constraint in the same transaction.
func (s *Scheduler) bind(ctx context.Context, d delivery, pod *v1.Pod, node string) {
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	err := s.postBinding(ctx, binding)
	if err != nil {
		s.cache.unassume(pod.UID)
		if ctx.Err() != nil {
			return // stopping; the next leader lists the pod afresh
		}
		// Whatever the error (409: another binder took the room first or
		// our cache is behind; a timeout whose bind may yet have landed;
		// even 404), the pod goes round again after back-off: the next
		// cycle drops it if the informer shows it bound or gone.
		s.log.Info("binding failed; retrying", "pod", d.key, "node", node, "err", err)
		s.queue.addRateLimited(d.key)
		return
	}
	s.queue.release(d)
	s.recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding",
		fmt.Sprintf("Successfully assigned %s to %s", d.key, node))
}

// postBinding sends binding. The API server runs the binds to one node one
// at a time (internal/apiserver node_bind_turns.go), so they no longer
// conflict there and this scheduler needs no per-node limit of its own.
func (s *Scheduler) postBinding(ctx context.Context, binding *v1.Binding) error {
	// Bounded: a bind stuck on a dead connection would otherwise keep the
	// pod assumed, and so never retried, for as long as the process lives.
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	return s.cfg.Client.CoreV1().Pods(binding.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
}

func (s *Scheduler) patchScheduledCondition(ctx context.Context, pod *v1.Pod, status v1.ConditionStatus, reason, msg string) error {
	// The resourceVersion makes the patch conditional on the pod being
	// exactly as judged (409 otherwise).
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"status": map[string]any{"conditions": []v1.PodCondition{{
			Type: v1.PodScheduled, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now(),
		}}},
	})
	if err != nil {
		return err
	}
	_, err = s.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

func podCondition(pod *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
