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

// scheduleOne decides where the pod under key goes and assumes it there.
// ok=false means there is nothing to bind now.
func (s *Scheduler) scheduleOne(ctx context.Context, key string) (*v1.Pod, string, bool) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		s.queue.Forget(key)
		return nil, "", false
	}
	pod, err := s.pods.Pods(ns).Get(name)
	if err != nil || !s.responsibleFor(pod) || s.cache.isAccounted(pod.UID) {
		s.queue.Forget(key)
		return nil, "", false
	}
	s.offset++
	d := schedule(pod, s.cache.snapshot(spreadGroup(pod)), s.offset)
	if d.node == "" {
		s.markUnschedulable(ctx, key, pod, d.message())
		return nil, "", false
	}
	s.cache.assume(pod, d.node)
	return pod, d.node, true
}

func (s *Scheduler) markUnschedulable(ctx context.Context, key string, pod *v1.Pod, msg string) {
	s.mu.Lock()
	s.unschedulable[key] = struct{}{}
	s.mu.Unlock()
	s.queue.AddAfter(key, unschedulableRetry)
	s.log.Debug("pod unschedulable", "pod", key, "message", msg)

	if cond := podCondition(pod, v1.PodScheduled); cond != nil && cond.Reason == v1.PodReasonUnschedulable && cond.Message == msg {
		return // already says so; do not write the same status again
	}
	s.recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", msg)
	if err := s.patchScheduledCondition(ctx, pod, v1.ConditionFalse, v1.PodReasonUnschedulable, msg); err != nil && !apierrors.IsNotFound(err) {
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
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.PodCondition{{
		Type: v1.PodScheduled, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now(),
	}}}})
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
