package pods

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

// Ephemeral containers, as the kubelet runs them: added to a running pod
// through the ephemeralcontainers subresource (as kubectl debug does), each
// starts in the pod's sandbox as it is, without restarting anything; one
// that targets a container shares its PID namespace; they are reported in
// ephemeralContainerStatuses, never ready; one that exits is never started
// again; and they are stopped with the pod.
func TestEphemeralContainerStartsInTheRunningPod(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "debugged"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{busybox("app", "sleep", "3601")}},
	})
	running := h.waitPod(pod, "Running and ready", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	appID := h.containerID(running, "app")

	// As the conformance test's debugger: a shell on a terminal with stdin
	// that keeps printing, here also listing the processes it sees.
	h.addEphemeral(pod, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: cri.Image(images.Busybox),
			Command:                  []string{"sh", "-c", "ps; while true; do echo polo; sleep 2; done"},
			Stdin:                    true,
			TTY:                      true,
			TerminationMessagePath:   corev1.TerminationMessagePathDefault,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		},
		TargetContainerName: "app",
	})
	withDebugger := h.waitPod(pod, "ephemeral container debugger running", func(p *corev1.Pod) bool {
		cs, ok := podutil.GetContainerStatus(p.Status.EphemeralContainerStatuses, "debugger")
		return ok && cs.State.Running != nil
	})
	dbg, _ := podutil.GetContainerStatus(withDebugger.Status.EphemeralContainerStatuses, "debugger")
	if dbg.Ready || dbg.Started != nil || dbg.RestartCount != 0 || dbg.Image != cri.Image(images.Busybox) || dbg.ImageID == "" ||
		!strings.HasPrefix(dbg.ContainerID, h.cfg.RuntimeName+"://") {
		t.Errorf("debugger status = %+v, want running, not ready, no started, image and IDs set", dbg)
	}
	if app := withDebugger.Status.ContainerStatuses[0]; h.containerID(withDebugger, "app") != appID || app.RestartCount != 0 || app.State.Running == nil {
		t.Errorf("the target container was restarted or stopped: %+v (was %s)", app, appID)
	}
	if withDebugger.Status.Phase != corev1.PodRunning || podCondition(withDebugger, corev1.PodReady) != corev1.ConditionTrue {
		t.Errorf("an ephemeral container changed the pod's phase or readiness: %s %+v", withDebugger.Status.Phase, withDebugger.Status.Conditions)
	}
	_, dbgID, _ := strings.Cut(dbg.ContainerID, "://")
	if out := h.exec(dbgID, "echo", "marco"); !strings.Contains(out, "marco") {
		t.Errorf("exec in the debugger printed %q", out)
	}
	logFile := filepath.Join(h.cfg.PodLogDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), "debugger", "0.log")
	wait.UntilTrue(t, 60*time.Second, "the debugger's log to show polo and the target's sleep 3601 (its PID namespace)", func(context.Context) (bool, error) {
		b, err := os.ReadFile(logFile)
		return err == nil && strings.Contains(string(b), "polo") && strings.Contains(string(b), "sleep 3601"), nil
	})

	// One that exits stays exited.
	h.addEphemeral(pod, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "once", Image: cri.Image(images.Busybox), Command: []string{"sh", "-c", "echo done"},
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}})
	h.waitPod(pod, "ephemeral container once terminated with exit 0", func(p *corev1.Pod) bool {
		cs, ok := podutil.GetContainerStatus(p.Status.EphemeralContainerStatuses, "once")
		return ok && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 && cs.State.Terminated.Reason == "Completed"
	})
	syncs := h.syncCount(pod.UID)
	wait.Until(t, 30*time.Second, "two more syncs of the pod", func() bool { return h.syncCount(pod.UID) >= syncs+2 })
	n := 0
	for _, c := range h.containers(pod.UID) {
		if c.Metadata.Name == "once" {
			n++
		}
	}
	p := h.waitPod(pod, "status read back", func(*corev1.Pod) bool { return true })
	once, _ := podutil.GetContainerStatus(p.Status.EphemeralContainerStatuses, "once")
	if n != 1 || once.State.Terminated == nil || once.RestartCount != 0 {
		t.Errorf("exited ephemeral container: %d instances in the runtime, status %+v; want one, still terminated", n, once)
	}
	if names := []string{p.Status.EphemeralContainerStatuses[0].Name, p.Status.EphemeralContainerStatuses[1].Name}; names[0] != "debugger" || names[1] != "once" {
		t.Errorf("ephemeral container statuses in order %v", names)
	}

	// Deletion stops the ephemeral containers with the rest.
	grace := int64(2)
	now := metav1.Now()
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	if _, err := h.client.CoreV1().Pods("default").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 60*time.Second, "the deleted pod's containers, the debugger's included, to leave the runtime", func(context.Context) (bool, error) {
		return len(h.containers(pod.UID)) == 0, nil
	})
}

// addEphemeral adds ec to the pod through the ephemeralcontainers
// subresource, on the pod as last read (the agent writes its status meanwhile).
func (h *harness) addEphemeral(pod *corev1.Pod, ec corev1.EphemeralContainer) {
	h.t.Helper()
	pods := h.client.CoreV1().Pods(pod.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(h.t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		_, err = pods.UpdateEphemeralContainers(h.t.Context(), pod.Name, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		h.t.Fatalf("add ephemeral container %s: %v", ec.Name, err)
	}
}
