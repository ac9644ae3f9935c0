package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// scheduleOne decides where the pod under key goes and assumes it there. It
// returns the API calls that carry the decision out (a binding, or the
// record of why the pod fits nowhere), for the caller to run off the
// scheduling loop; nil means there is nothing to do.
func (s *Scheduler) scheduleOne(key string) func(context.Context) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		s.queue.Forget(key)
		return nil
	}
	pod, err := s.pods.Pods(ns).Get(name)
	if err != nil || !s.responsibleFor(pod) || s.cache.isAccounted(pod.UID) {
		s.queue.Forget(key)
		return nil
	}
	s.offset++
	var d decision
	s.cache.withNodes(spreadGroup(pod), func(nodes nodeList) { d = schedule(pod, nodes, s.offset) })
	if d.node == "" {
		msg := d.message()
		s.waitForClusterChange(key, msg)
		return func(ctx context.Context) { s.recordUnschedulable(ctx, key, pod, msg) }
	}
	s.cache.assume(pod, d.node)
	return func(ctx context.Context) { s.bind(ctx, key, pod, d.node) }
}

// waitForClusterChange parks a pod that fits nowhere until a cluster event
// (or the periodic retry) may let it fit.
func (s *Scheduler) waitForClusterChange(key, msg string) {
	s.mu.Lock()
	s.unschedulable[key] = struct{}{}
	s.mu.Unlock()
	s.queue.AddAfter(key, unschedulableRetry)
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
	err := s.patchScheduledCondition(ctx, pod, v1.ConditionFalse, v1.PodReasonUnschedulable, msg)
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

// bindTimeout bounds one binding request.
const bindTimeout = 30 * time.Second

// bind asks the API server to bind pod to node; the server re-checks every
// constraint in the same transaction.
func (s *Scheduler) bind(ctx context.Context, key string, pod *v1.Pod, node string) {
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	// Bounded: a bind stuck on a dead connection would otherwise keep the
	// pod assumed, and so never retried, for as long as the process lives.
	bindCtx, cancel := context.WithTimeout(ctx, bindTimeout)
	defer cancel()
	err := s.cfg.Client.CoreV1().Pods(pod.Namespace).Bind(bindCtx, binding, metav1.CreateOptions{})
	if err != nil {
		s.cache.unassume(pod.UID)
		if apierrors.IsNotFound(err) || ctx.Err() != nil {
			s.queue.Forget(key)
			return
		}
		// A 409 means another binder took the room first (or our cache is
		// behind the watch): try again after back-off with fresh state.
		s.log.Info("binding failed; retrying", "pod", key, "node", node, "err", err)
		s.queue.AddRateLimited(key)
		return
	}
	s.queue.Forget(key)
	s.recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding",
		fmt.Sprintf("Successfully assigned %s to %s", key, node))
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
