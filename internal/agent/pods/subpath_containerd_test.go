package pods

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berth/berth/internal/agent/containerdtest"
)

// TestPlantedSymlinkSubPathNeverShowsTheHost: the subPath escape of
// CVE-2017-1002101 / CVE-2021-25741 through the agent and a real runtime.
// An init container plants symlinks to the host's root in an emptyDir; a
// container mounting them by subPath is refused with the kubelet's error
// and never created, while a sibling with an honest subPath runs. A
// container that swaps its own subPath for a symlink is refused on its
// restart. Deleting the pod leaves nothing mounted.
func TestPlantedSymlinkSubPathNeverShowsTheHost(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	// The host file a container must never see.
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "host-marker"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	plant := busybox("plant", "sh", "-c", "ln -s / /data/escape && ln -s "+hostDir+" /data/tohost && mkdir /data/ok && echo in-volume >/data/ok/f")
	plant.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	victim := busybox("victim", "sleep", "3600")
	victim.VolumeMounts = []corev1.VolumeMount{
		{Name: "data", MountPath: "/ok", SubPath: "ok"},
		{Name: "data", MountPath: "/escaped", SubPath: "escape"},
	}
	viaDir := busybox("via-dir", "sleep", "3600")
	viaDir.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/escaped", SubPath: "tohost"}}
	honest := busybox("honest", "sleep", "3600")
	honest.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/ok", SubPath: "ok"}}
	// First run: its subPath is a directory; it swaps it for a symlink to
	// the host's root and exits, to be restarted.
	swapper := busybox("swapper", "sh", "-c", "if [ -e /sub/"+hostDir+"/host-marker ]; then echo escaped; sleep 3600; fi; rmdir /data/swap && ln -s / /data/swap; exit 1")
	swapper.VolumeMounts = []corev1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/sub", SubPath: "swap"},
	}
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "subpath-escape"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{plant},
			Containers:     []corev1.Container{victim, viaDir, honest, swapper},
			Volumes:        []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	})
	refused := func(p *corev1.Pod, name string) bool {
		w := containerStatus(p, name).State.Waiting
		return w != nil && w.Reason == reasonCreateConfigError &&
			strings.Contains(w.Message, `failed to prepare subPath for volumeMount "data" of container "`+name+`"`)
	}
	p := h.waitPod(pod, "with honest running and victim, via-dir refused", func(p *corev1.Pod) bool {
		return containerStatus(p, "honest").State.Running != nil && refused(p, "victim") && refused(p, "via-dir")
	})
	if got := h.exec(h.containerID(p, "honest"), "cat", "/ok/f"); got != "in-volume\n" {
		t.Errorf("honest subPath shows %q, want the volume's file", got)
	}
	// swapper ran once with its directory, swapped it, and is refused on
	// the restart.
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		h.clock.Step(backoffInitial)
		p, err := h.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && refused(p, "swapper"), nil
	})
	if err != nil {
		t.Fatalf("swapper never refused after planting its symlink: %+v", containerStatus(h.get(pod), "swapper"))
	}
	for _, c := range h.containers(pod.UID) {
		switch c.Metadata.Name {
		case "victim", "via-dir":
			t.Errorf("container %s created with a subPath out of its volume", c.Metadata.Name)
		case "swapper":
			if c.Metadata.Attempt > 0 {
				t.Errorf("swapper restarted (attempt %d) through its planted symlink", c.Metadata.Attempt)
			}
		}
	}

	if err := h.client.CoreV1().Pods(pod.Namespace).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(h.cfg.DataDir, "pods", string(pod.UID))
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err), nil
	}); err != nil {
		t.Fatalf("pod directory never removed; mounts under it: %v", containerdtest.MountsUnder(podDir))
	}
	if left := containerdtest.MountsUnder(podDir); len(left) > 0 {
		t.Errorf("mounts left after the pod's removal: %v", left)
	}
	if data, err := os.ReadFile(filepath.Join(hostDir, "host-marker")); err != nil || string(data) != "host" {
		t.Errorf("host marker after the pod's removal: %q, %v", data, err)
	}
}

func containerStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

func (h *harness) get(pod *corev1.Pod) *corev1.Pod {
	p, err := h.client.CoreV1().Pods(pod.Namespace).Get(h.t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}
