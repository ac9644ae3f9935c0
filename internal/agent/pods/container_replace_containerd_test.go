package pods

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
)

// As the kubelet: a running container whose image the pod's spec changed
// is stopped and its next attempt started from the new spec, whatever the
// restart policy.
func TestChangedImageReplacesTheRunningContainer(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reimage", Generation: 1},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{busybox("main", "sleep", "3600")}},
	}
	pod = h.create(pod)
	running := h.waitPod(pod, "Running and Ready", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	first := running.Status.ContainerStatuses[0].ContainerID

	newImage := cri.Image(images.BusyboxDocker)
	patch := fmt.Appendf(nil, `{"metadata":{"generation":2},"spec":{"containers":[{"name":"main","image":%q}]}}`, newImage)
	if _, err := h.client.CoreV1().Pods(pod.Namespace).Patch(t.Context(), pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitPod(pod, "the container replaced from the new image, running", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.ContainerID != first && cs.RestartCount == 1 && cs.State.Running != nil && cs.Ready &&
			strings.Contains(cs.Image, "busybox-docker") && p.Status.Phase == corev1.PodRunning
	})
}
