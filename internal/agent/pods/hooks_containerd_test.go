package pods

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestLifecycleHooks(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	hostDir := t.TempDir()
	c := busybox("c", "sleep", "3600")
	c.Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo started >/tmp/poststart"}}},
		PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo stopping >/out/prestop"}}},
	}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "out", MountPath: "/out"}}
	grace := int64(5)
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hooks"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []corev1.Container{c},
			Volumes:                       []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}}},
		},
	})
	p := h.waitPod(pod, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if got := h.exec(h.containerID(p, "c"), "cat", "/tmp/poststart"); got != "started\n" {
		t.Fatalf("postStart output %q", got)
	}
	h.deleteGracefully(p, grace)
	if got, err := readFile(hostDir + "/prestop"); err != nil || got != "stopping\n" {
		t.Fatalf("preStop wrote %q, %v", got, err)
	}
}

func TestMissingSecretKeyIsCreateContainerConfigError(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	c := busybox("c", "sleep", "3600")
	c.Env = []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k",
	}}}}
	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "badenv"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}})
	h.waitPod(pod, "in CreateContainerConfigError", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == reasonCreateConfigError && strings.Contains(w.Message, `secret "nope"`)
	})
	if n := len(h.containers(pod.UID)); n != 0 {
		t.Fatalf("%d containers created with an unresolvable env", n)
	}
}

// TestOrphanedSandboxIsRemoved: a sandbox carrying the agent's labels for a
// pod the API does not have (deleted while the agent was down) is removed.
func TestOrphanedSandboxIsRemoved(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	m := New(h.cfg, h.client, h.ctd.Client.Runtime, h.ctd.Client.Images, nil)
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ghost", Namespace: "default", UID: "uid-ghost"}}
	cfg, err := m.sandboxConfig(orphan, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctd.Client.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	h.startAgent()
	if err := wait.PollTrue(ctx, 60*time.Second, "the orphaned sandbox to leave the runtime", func(ctx context.Context) (bool, error) {
		sbs, err := h.ctd.Client.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		return err == nil && len(sbs.Items) == 0, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestSidecarStoppedLastWithItsPreStopHook: deleting a pod runs its
// sidecar's preStop hook too, and stops the sidecar only after the main
// container has exited, as the kubelet terminates a pod.
func TestSidecarStoppedLastWithItsPreStopHook(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	hostDir := t.TempDir()
	out := []corev1.VolumeMount{{Name: "out", MountPath: "/out"}}
	// Each appends its name to /out/order when it gets SIGTERM.
	trapping := func(name string) corev1.Container {
		c := busybox(name, "sh", "-c", "trap 'echo "+name+" >>/out/order; exit 0' TERM; while true; do sleep 1; done")
		c.VolumeMounts = out
		return c
	}
	sidecar := trapping("sidecar")
	sidecar.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
	sidecar.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo stopping >/out/prestop"}}}}
	grace := int64(10)
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecar-stop"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			InitContainers:                []corev1.Container{sidecar},
			Containers:                    []corev1.Container{trapping("main")},
			Volumes:                       []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}}},
		},
	})
	p := h.waitPod(pod, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	h.deleteGracefully(p, grace)
	if got, err := readFile(hostDir + "/prestop"); err != nil || got != "stopping\n" {
		t.Errorf("the sidecar's preStop wrote %q, %v", got, err)
	}
	if got, err := readFile(hostDir + "/order"); err != nil || got != "main\nsidecar\n" {
		t.Errorf("SIGTERM order %q, %v; want main, then the sidecar", got, err)
	}
}

// deleteGracefully marks p deleted with grace seconds, as the API server
// marks a graceful deletion, and waits for the agent to finish it.
func (h *harness) deleteGracefully(p *corev1.Pod, grace int64) {
	h.t.Helper()
	now := metav1.Now()
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	if _, err := h.client.CoreV1().Pods(p.Namespace).Update(h.t.Context(), p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	if err := wait.PollTrue(h.t.Context(), 60*time.Second, "pod "+p.Name+" to be deleted", func(ctx context.Context) (bool, error) {
		_, err := h.client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		h.t.Fatal(err)
	}
}
