package pods

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// reasonAppArmor is the kubelet's rejection reason for a pod asking for an
// AppArmor profile the node cannot enforce.
const reasonAppArmor = "AppArmor"

// rejection is why the node refuses to run a pod: the kubelet's admission
// reason and message.
type rejection struct{ reason, message string }

// admit runs the kubelet's node-local admission checks that berth's
// scheduler does not already make at binding: sysctls against the node's
// allowlist, then AppArmor against the host. It returns nil to admit.
func (m *Manager) admit(pod *corev1.Pod) *rejection {
	if msg := m.sysctls.Admit(pod); msg != "" {
		return &rejection{reasonSysctlForbidden, msg}
	}
	// As the kubelet, AppArmor is checked only before the pod has run.
	if pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "" {
		if err := m.appArmor.Validate(pod); err != nil {
			return &rejection{reasonAppArmor, fmt.Sprintf("Cannot enforce AppArmor: %v", err)}
		}
	}
	return nil
}

// reject fails a pod the node will not run, as the kubelet's rejectPod: a
// warning event and the status Failed with the reason, no container started.
func (m *Manager) reject(ctx context.Context, pod *corev1.Pod, r *rejection) error {
	m.event(pod, corev1.EventTypeWarning, r.reason, r.message)
	m.log.Info("pod rejected", "pod", pod.Namespace+"/"+pod.Name, "reason", r.reason, "message", r.message)
	status := corev1.PodStatus{
		QOSClass: qosClass(pod),
		Phase:    corev1.PodFailed,
		Reason:   r.reason,
		Message:  "Pod was rejected: " + r.message,
	}
	// The scheduler's condition stays, as the kubelet's status manager
	// keeps conditions it does not own.
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			status.Conditions = append(status.Conditions, c)
		}
	}
	return m.patchStatus(ctx, pod, status)
}
