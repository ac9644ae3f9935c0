package pods

import (
	"context"
	"fmt"
	"runtime"

	corev1 "k8s.io/api/core/v1"

	"github.com/berth/berth/internal/fit"
)

// reasonAppArmor is the kubelet's rejection reason for a pod asking for an
// AppArmor profile the node cannot enforce.
const reasonAppArmor = "AppArmor"

// admit runs the kubelet's node-local admission checks that berth's
// scheduler does not already make at binding: the pod's OS against the
// node's, sysctls against the node's allowlist, then AppArmor against the
// host. It returns nil to admit.
func (m *Manager) admit(pod *corev1.Pod) *fit.Rejection {
	if r := fit.AdmitOS(pod, runtime.GOOS); r != nil {
		return r
	}
	if msg := m.sysctls.Admit(pod); msg != "" {
		return &fit.Rejection{Reason: reasonSysctlForbidden, Message: msg}
	}
	// As the kubelet, AppArmor is checked only before the pod has run.
	if pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "" {
		if err := m.appArmor.Validate(pod); err != nil {
			return &fit.Rejection{Reason: reasonAppArmor, Message: fmt.Sprintf("Cannot enforce AppArmor: %v", err)}
		}
	}
	return nil
}

// reject fails a pod the node will not run, as the kubelet's rejectPod: a
// warning event and the status Failed with the reason, no container started.
func (m *Manager) reject(ctx context.Context, pod *corev1.Pod, r *fit.Rejection) error {
	m.event(pod, corev1.EventTypeWarning, r.Reason, r.Message)
	m.log.Info("pod rejected", "pod", pod.Namespace+"/"+pod.Name, "reason", r.Reason, "message", r.Message)
	status := r.Status(pod)
	status.QOSClass = qosClass(pod)
	return m.patchStatus(ctx, pod, status)
}
