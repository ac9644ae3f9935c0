package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/containerdtest"
	"github.com/berth/berth/internal/runtime/runtimetest"
	"github.com/berth/berth/internal/testkit/images"
)

// TestKubeletSecurityContextUnderRunc: the security context the kubelet
// (and berth's agent) sends for a pod with seccompProfile RuntimeDefault
// and procMount Default is enforced by the real runtime: the container's
// process runs under a seccomp filter (mode 2) and /proc/kcore is masked,
// while a container sent Unconfined has no filter.
func TestKubeletSecurityContextUnderRunc(t *testing.T) {
	r := runtimetest.Start(t, monitor)
	p := runPod(t, r, "secctx", runtimeapi.NamespaceMode_CONTAINER, nil)
	kubelet := func(profile runtimeapi.SecurityProfile_ProfileType) *runtimeapi.LinuxContainerSecurityContext {
		return &runtimeapi.LinuxContainerSecurityContext{
			Seccomp:       &runtimeapi.SecurityProfile{ProfileType: profile},
			MaskedPaths:   []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
			RunAsUser:     &runtimeapi.Int64Value{},
		}
	}
	confined := startWithSecurity(t, p, "confined", kubelet(runtimeapi.SecurityProfile_RuntimeDefault))
	if got := procStatus(t, r, confined, "Seccomp"); got != "2" {
		t.Errorf("RuntimeDefault: Seccomp %s, want 2", got)
	}
	if out := execOut(t, r, confined, "sh", "-c", "wc -c < /proc/kcore; touch /proc/sys/kernel/x 2>&1 || echo read-only"); !strings.HasPrefix(out, "0\n") || !strings.Contains(out, "read-only") {
		t.Errorf("masked /proc/kcore and read-only /proc/sys: got %q", out)
	}
	unconfined := startWithSecurity(t, p, "unconfined", kubelet(runtimeapi.SecurityProfile_Unconfined))
	if got := procStatus(t, r, unconfined, "Seccomp"); got != "0" {
		t.Errorf("Unconfined: Seccomp %s, want 0", got)
	}
}

func startWithSecurity(t *testing.T, p pod, name string, sc *runtimeapi.LinuxContainerSecurityContext) string {
	t.Helper()
	ctx := t.Context()
	c, err := p.r.Client.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: p.id, SandboxConfig: p.cfg,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: containerdtest.Image(images.Busybox)},
			Command: []string{"sleep", "3600"}, LogPath: name + ".log", Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: sc}}})
	if err != nil {
		t.Fatalf("CreateContainer %s: %v", name, err)
	}
	if _, err := p.r.Client.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		t.Fatalf("StartContainer %s: %v", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		st, err := p.r.Client.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId})
		return err == nil && st.Status.State == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
	})
	if err != nil {
		t.Fatalf("container %s never reported running", name)
	}
	return c.ContainerId
}

func execOut(t *testing.T, r *runtimetest.Runtime, id string, cmd ...string) string {
	t.Helper()
	resp, err := r.Client.Runtime.ExecSync(t.Context(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 30})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("exec %v in %s: %v (exit %d, stderr %s)", cmd, id, err, resp.GetExitCode(), resp.GetStderr())
	}
	return string(resp.Stdout)
}

// procStatus is a field of /proc/1/status in the container.
func procStatus(t *testing.T, r *runtimetest.Runtime, id, field string) string {
	t.Helper()
	for _, line := range strings.Split(execOut(t, r, id, "cat", "/proc/1/status"), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/1/status of %s", field, id)
	return ""
}
