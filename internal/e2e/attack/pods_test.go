package attack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/testkit/wait"
)

// hostPathOfDataDir: the attacker mounts the server's data directory (its
// store, CA keys, admin kubeconfig) into a pod. PodSecurity's baseline
// level, enforced by default, forbids every hostPath volume.
func hostPathOfDataDir(t *testing.T, c *cluster, mallory kubernetes.Interface) {
	const name = "hostpath-data-dir"
	before := c.podNames(t, attackNS)
	t.Cleanup(func() { c.deletePodNow(attackNS, name) })
	main := busybox("main", "ls", "/host")
	main.VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host", ReadOnly: true}}
	pod := attackPod(name, corev1.PodSpec{
		Volumes:    []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: c.dataDir}}}},
		Containers: []corev1.Container{main},
	})
	_, err := mallory.CoreV1().Pods(attackNS).Create(t.Context(), pod, metav1.CreateOptions{})
	t.Logf("create pod with hostPath %s: %v", c.dataDir, err)
	for _, want := range []string{`violates PodSecurity "baseline:latest"`, "hostPath volumes"} {
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("create a pod with hostPath %s as %s: err = %v, want 403 Forbidden containing %q", c.dataDir, attacker, err, want)
		}
	}
	if _, err := c.admin.CoreV1().Pods(attackNS).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod %s/%s after the refused create: get = %v, want NotFound", attackNS, name, err)
	}
	if after := c.podNames(t, attackNS); !slices.Equal(before, after) {
		t.Errorf("pods in %s changed: %v -> %v", attackNS, before, after)
	}
}

// runAsNonRootWithRootImage: a pod asks for runAsNonRoot without a
// runAsUser and its image runs as root. The kubelet refuses to create the
// container (CreateContainerConfigError), so nothing ever runs as root.
func runAsNonRootWithRootImage(t *testing.T, c *cluster, mallory kubernetes.Interface) {
	const name = "nonroot-root-image"
	t.Cleanup(func() { c.deletePodNow(attackNS, name) })
	pod := attackPod(name, corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: new(true)},
		Containers:      []corev1.Container{busybox("main", "sh", "-c", "echo ran as uid $(id -u)")},
	})
	if _, err := mallory.CoreV1().Pods(attackNS).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s (passes baseline): %v", name, err)
	}
	const want = "runAsNonRoot and image will run as root"
	p := waitPodContainer(t, c, name, "main", 2*time.Minute, func(s corev1.ContainerStatus) (bool, error) {
		if s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil {
			return false, fmt.Errorf("the container started although the pod is runAsNonRoot and the image runs as root: %s", describeState(s.State))
		}
		w := s.State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, want), nil
	}, "container main waiting with CreateContainerConfigError and a message containing "+fmt.Sprintf("%q", want))
	t.Logf("pod %s: %s", name, describeContainers(p))
}

// seccompRuntimeDefault: a pod asks for the runtime's default seccomp
// profile; its process runs in seccomp filter mode (2).
func seccompRuntimeDefault(t *testing.T, c *cluster, mallory kubernetes.Interface) {
	const name = "seccomp-runtime-default"
	t.Cleanup(func() { c.deletePodNow(attackNS, name) })
	pod := attackPod(name, corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers:      []corev1.Container{busybox("main", "grep", "Seccomp:", "/proc/self/status")},
	})
	if _, err := mallory.CoreV1().Pods(attackNS).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	waitPodContainer(t, c, name, "main", 2*time.Minute, func(s corev1.ContainerStatus) (bool, error) {
		return s.State.Terminated != nil, nil
	}, "container main to finish")
	logs, err := mallory.CoreV1().Pods(attackNS).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("logs of %s: %v", name, err)
	}
	if !strings.Contains(string(logs), "Seccomp:\t2") {
		t.Errorf("pod %s with seccompProfile RuntimeDefault: /proc/self/status says %q, want \"Seccomp:\\t2\" (filter mode)", name, strings.TrimSpace(string(logs)))
	}
}

// subPathSymlinkSwap: an init container plants a symlink to a host
// directory in an emptyDir and the main container mounts it by subPath. The
// kubelet resolves subPaths inside the volume and refuses one that leads
// out of it; a runtime that bind-mounts the symlink follows it on the host.
// The host directory holds a marker that must never reach the pod's logs.
func subPathSymlinkSwap(t *testing.T, c *cluster, mallory kubernetes.Interface) {
	const name = "subpath-symlink"
	t.Cleanup(func() { c.deletePodNow(attackNS, name) })
	markerDir, marker := hostMarker(t)
	plant := busybox("plant", "ln", "-s", markerDir, "/data/escape")
	plant.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	main := busybox("main", "sh", "-c", "cat /mnt/marker; ls -la /mnt")
	main.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/mnt", SubPath: "escape"}}
	pod := attackPod(name, corev1.PodSpec{
		Volumes:        []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		InitContainers: []corev1.Container{plant},
		Containers:     []corev1.Container{main},
	})
	if _, err := mallory.CoreV1().Pods(attackNS).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	var ran bool
	p := waitPodContainer(t, c, name, "main", 2*time.Minute, func(s corev1.ContainerStatus) (bool, error) {
		if s.State.Running != nil || s.State.Terminated != nil {
			ran = true
			return true, nil
		}
		w := s.State.Waiting
		return w != nil && (w.Reason == "CreateContainerConfigError" || w.Reason == "CreateContainerError"), nil
	}, "container main to be refused (CreateContainerConfigError) or to run")
	t.Logf("pod %s: %s", name, describeContainers(p))
	if !ran {
		return
	}
	// The container ran with the subPath mounted: show what it saw.
	var logs []byte
	c.poll(t, "the logs of "+name+"'s main container", time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		logs, err = c.admin.CoreV1().Pods(attackNS).GetLogs(name, &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		return err == nil && len(logs) > 0, nil
	})
	if strings.Contains(string(logs), marker) {
		t.Errorf("pod %s read the host's %s through subPath symlink escape -> %s: logs %q; want the container refused with a subPath error (CreateContainerConfigError)",
			name, filepath.Join(markerDir, "marker"), markerDir, logs)
	} else {
		t.Errorf("pod %s's main container ran with subPath escape (a symlink to %s) mounted, logs %q; want it refused with a subPath error (CreateContainerConfigError)",
			name, markerDir, logs)
	}
}

// hostMarker writes a random marker to DIR/marker in a fresh directory
// under /tmp, removed at clean-up, and returns both.
func hostMarker(t *testing.T) (dir, marker string) {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "berth-attack-marker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	marker = "berth-attack-secret-" + randomHex(t)
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte(marker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, marker
}

func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// waitPodContainer polls pod name in the attacker's namespace until cond
// holds for container's status (an error from cond ends the wait at once)
// and returns the pod; it fails the test with what it waited for and the
// last status seen.
func waitPodContainer(t *testing.T, c *cluster, name, container string, timeout time.Duration,
	cond func(corev1.ContainerStatus) (bool, error), what string) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.Poll(t.Context(), timeout, what, func(ctx context.Context) error {
		p, err := c.admin.CoreV1().Pods(attackNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		last = p
		for _, s := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			if s.Name != container {
				continue
			}
			ok, err := cond(s)
			if err != nil {
				t.Fatalf("pod %s/%s, waiting %v for %s: %v; last seen %s", attackNS, name, timeout, what, err, describeContainers(p))
			}
			if ok {
				return nil
			}
		}
		return fmt.Errorf("last seen %s", describeContainers(p))
	})
	if err != nil {
		t.Fatalf("pod %s/%s: %v", attackNS, name, err)
	}
	return last
}
