package pods

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestPlantedSymlinkSubPathNeverShowsTheHost: the subPath escape of
// CVE-2017-1002101 / CVE-2021-25741 through the agent and a real runtime.
// An init container plants symlinks to the host's root in an emptyDir; a
// container mounting them by subPath is refused with the kubelet's error
// and never created, while a sibling with an honest subPath runs. When a
// sibling swaps a running container's subPath directory for a symlink to
// the host's root, that container's restart is refused. Deleting the pod
// leaves nothing mounted.
func TestPlantedSymlinkSubPathNeverShowsTheHost(t *testing.T) {
	h := newHarness(t)
	// Watched from before the pod exists: the swapper's refusal shows in its
	// status only until the next sync turns it into CrashLoopBackOff.
	w := h.watchPodsAndStartAgent()
	// The host file a container must never see.
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "host-marker"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	plant := busybox("plant", "sh", "-c", "ln -s / /data/escape && ln -s "+hostDir+" /data/tohost && mkdir /data/ok /data/swap && echo in-volume >/data/ok/f")
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
	// swapper's first run sees its subPath as the planted directory: it says
	// so (ran), waits (at most 60 s) for swap-planter to have replaced the
	// directory by a symlink to the host's root, and exits to be restarted.
	// Were its restart to follow the symlink, it would see the host marker
	// and stay running.
	swapper := busybox("swapper", "sh", "-c", "if [ -e /sub"+hostDir+"/host-marker ]; then echo escaped; sleep 3600; fi; "+
		"touch /sub/ran; i=0; while [ ! -e /sub/swapped ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; exit 1")
	swapper.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/sub", SubPath: "swap"}}
	// swap-planter has the whole volume: once swapper runs, it moves the
	// directory aside, plants the symlink in its place and tells swapper
	// through the moved directory, which swapper's mount still shows.
	swapPlanter := busybox("swap-planter", "sh", "-c", "i=0; while [ ! -e /data/swap/ran ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "+
		"mv /data/swap /data/swap-old && ln -s / /data/swap && touch /data/swap-old/swapped && sleep 3600")
	swapPlanter.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	refused := func(p *corev1.Pod, name string) bool {
		w := containerStatus(p, name).State.Waiting
		return w != nil && w.Reason == reasonCreateConfigError &&
			strings.Contains(w.Message, `failed to prepare subPath for volumeMount "data" of container "`+name+`"`)
	}
	// Refused after it ran and exited: on a restart.
	swapperRefused := watchFor(w, "subpath-escape", func(p *corev1.Pod) bool {
		return refused(p, "swapper") && containerStatus(p, "swapper").LastTerminationState.Terminated != nil
	})
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "subpath-escape"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{plant},
			Containers:     []corev1.Container{victim, viaDir, honest, swapper, swapPlanter},
			Volumes:        []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	})
	p := h.waitPod(pod, "with honest running and victim, via-dir refused", func(p *corev1.Pod) bool {
		return containerStatus(p, "honest").State.Running != nil && refused(p, "victim") && refused(p, "via-dir")
	})
	if got := h.exec(h.containerID(p, "honest"), "cat", "/ok/f"); got != "in-volume\n" {
		t.Errorf("honest subPath shows %q, want the volume's file", got)
	}
	// swapper ran once with its directory, exited after the swap, and its
	// first restart (immediate: no back-off yet) is refused.
	select {
	case <-swapperRefused:
	case <-time.After(90 * time.Second):
		t.Fatalf("swapper's restart never refused after the swap of its subPath: %+v", containerStatus(h.get(pod), "swapper"))
	}
	if cs := containerStatus(h.get(pod), "swap-planter"); cs.State.Running == nil {
		t.Errorf("swap-planter not running after planting its symlink: %+v", cs)
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
	if err := wait.PollTrue(t.Context(), 60*time.Second, "the pod directory to be removed", func(context.Context) (bool, error) {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err), nil
	}); err != nil {
		t.Fatalf("%v; mounts under it: %v", err, cri.MountsUnder(podDir))
	}
	if left := cri.MountsUnder(podDir); len(left) > 0 {
		t.Errorf("mounts left after the pod's removal: %v", left)
	}
	if data, err := os.ReadFile(filepath.Join(hostDir, "host-marker")); err != nil || string(data) != "host" {
		t.Errorf("host marker after the pod's removal: %q, %v", data, err)
	}
}

// watchFor drains w until it stops and closes the returned channel the
// first time the pod named name satisfies cond. It must drain: the fake
// clientset's watcher panics when its buffer fills.
func watchFor(w watch.Interface, name string, cond func(*corev1.Pod) bool) <-chan struct{} {
	seen := make(chan struct{})
	go func() {
		var once sync.Once
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Name == name && cond(p) {
				once.Do(func() { close(seen) })
			}
		}
	}()
	return seen
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
