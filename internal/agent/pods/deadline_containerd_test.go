package pods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// activeDeadlineSeconds set on a running pod (as the conformance test
// does): once the pod has run that long it fails with DeadlineExceeded and
// its container is stopped.
func TestPodPastItsActiveDeadlineFails(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "deadline"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{busybox("c", "sleep", "3600")}},
	})
	h.waitPod(pod, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if _, err := h.client.CoreV1().Pods("default").Patch(t.Context(), pod.Name, types.StrategicMergePatchType,
		[]byte(`{"spec":{"activeDeadlineSeconds":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(3 * time.Second) // past the deadline on the agent's clock
	failed := h.waitPod(pod, "Failed with DeadlineExceeded", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == reasonDeadlineExceeded
	})
	if cs := failed.Status.ContainerStatuses[0]; cs.State.Terminated == nil {
		t.Errorf("container still %+v after the deadline", cs.State)
	}
	if failed.Status.Message != messageDeadlineExceeded {
		t.Errorf("message %q", failed.Status.Message)
	}
}
