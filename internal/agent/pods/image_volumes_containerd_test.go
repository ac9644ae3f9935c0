package pods

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/testkit/cri"
)

// TestMissingImageVolumeFailsOnlyItsContainers mounts an image volume whose
// image no registry has: the container mounting it waits with
// ErrImagePull, then ImagePullBackOff, naming the image, and pulls again
// when the back-off ends; the pod's other container runs.
func TestMissingImageVolumeFailsOnlyItsContainers(t *testing.T) {
	h := newHarness(t)
	w := h.watchPodsAndStartAgent()
	missing := cri.Image("berth-test/does-not-exist:latest")
	mounting := busybox("mounting", "sleep", "3600")
	mounting.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "image-volume"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{mounting, busybox("other", "sleep", "3600")},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				Image: &corev1.ImageVolumeSource{Reference: missing, PullPolicy: corev1.PullAlways},
			}}},
		},
	})
	h.waitReasons(w, pod.UID, reasonErrImagePull, reasonImagePullBackOff)
	p := h.waitPod(pod, "container other running", func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "other" {
				return cs.State.Running != nil
			}
		}
		return false
	})
	if wt := p.Status.ContainerStatuses[0].State.Waiting; wt == nil || !strings.Contains(wt.Message, missing) {
		t.Errorf("container mounting the volume: waiting %+v, want a message naming %s", wt, missing)
	}
	h.clock.Step(10 * time.Second)
	h.waitReasons(w, pod.UID, reasonErrImagePull, reasonImagePullBackOff)
}
