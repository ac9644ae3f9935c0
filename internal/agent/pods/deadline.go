package pods

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's activeDeadlineSeconds: a pod active on the node longer than
// its deadline, counted from status.startTime, fails with DeadlineExceeded
// and its containers are stopped (the deadline may be set or shortened
// while the pod runs).

const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// untilDeadline is how long pod may still run; ok is false without a
// deadline or before the pod has started.
func (m *Manager) untilDeadline(pod *corev1.Pod) (left time.Duration, ok bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || pod.Status.StartTime == nil {
		return 0, false
	}
	deadline := pod.Status.StartTime.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
	return deadline.Sub(m.clock.Now()), true
}

// failPastDeadline stops the pod's containers and reports it Failed.
func (m *Manager) failPastDeadline(ctx context.Context, pod *corev1.Pod, st podState) (syncResult, error) {
	m.event(pod, corev1.EventTypeNormal, reasonDeadlineExceeded, messageDeadlineExceeded)
	m.prober.stopPod(pod.UID)
	m.stopContainers(ctx, pod, st, gracePeriod(pod))
	m.stopSandboxes(ctx, st)
	st, err := observe(ctx, m.rt, string(pod.UID))
	if err != nil {
		return syncResult{}, err
	}
	status, err := m.podStatus(ctx, pod, st, nil)
	if err != nil {
		return syncResult{}, err
	}
	status.Phase, status.Reason, status.Message = corev1.PodFailed, reasonDeadlineExceeded, messageDeadlineExceeded
	return syncResult{}, m.patchStatus(ctx, pod, status)
}
