package server_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/pkg/securitycontext"

	"github.com/berth/berth/internal/runtime/runtimetest"
	"github.com/berth/berth/internal/testkit/images"
)

// TestKubeletSecurityContextUnderRunc: the security context the kubelet
// (and berth's agent) sends for a pod with seccompProfile RuntimeDefault
// and procMount Default is enforced by the real runtime: the container's
// processes run under a seccomp filter (mode 2), the masked /proc files
// (/proc/kcore where the kernel has one) read empty and /proc/sys is
// mounted read-only, while a container sent Unconfined has no filter.
func TestKubeletSecurityContextUnderRunc(t *testing.T) {
	r := runtimetest.Start(t, monitor)
	r.Pull(t, images.Busybox)
	p := runPod(t, r, "secctx", runtimeapi.NamespaceMode_CONTAINER, nil)
	// The masks are the kubelet's own conversion of procMount Default, the
	// one the agent calls too.
	procMount := corev1.DefaultProcMount
	kubelet := func(profile runtimeapi.SecurityProfile_ProfileType) *runtimeapi.LinuxContainerSecurityContext {
		return &runtimeapi.LinuxContainerSecurityContext{
			Seccomp:       &runtimeapi.SecurityProfile{ProfileType: profile},
			MaskedPaths:   securitycontext.ConvertToRuntimeMaskedPaths(&procMount),
			ReadonlyPaths: securitycontext.ConvertToRuntimeReadonlyPaths(&procMount),
			RunAsUser:     &runtimeapi.Int64Value{},
		}
	}
	sc := kubelet(runtimeapi.SecurityProfile_RuntimeDefault)
	masked := readableOnHost(t, sc.MaskedPaths)
	confined := p.startWithSecurity(t, "confined", sc)
	for _, f := range []string{"/proc/1/status", "/proc/self/status"} {
		if got := procStatus(t, r, confined, f, "Seccomp"); got != "2" {
			t.Errorf("RuntimeDefault: %s says Seccomp %s, want 2", f, got)
		}
	}
	for _, f := range masked {
		if out := execOut(t, r, confined, "sh", "-c", "wc -c < "+f); out != "0\n" {
			t.Errorf("masked %s (not empty on the host) reads %q bytes in the container, want 0", f, out)
		}
	}
	if out := execOut(t, r, confined, "awk", `$5 == "/proc/sys" { print $6 }`, "/proc/self/mountinfo"); !strings.HasPrefix(out, "ro,") {
		t.Errorf("/proc/sys mount options %q, want read-only", out)
	}
	unconfined := p.startWithSecurity(t, "unconfined", kubelet(runtimeapi.SecurityProfile_Unconfined))
	for _, f := range []string{"/proc/1/status", "/proc/self/status"} {
		if got := procStatus(t, r, unconfined, f, "Seccomp"); got != "0" {
			t.Errorf("Unconfined: %s says Seccomp %s, want 0", f, got)
		}
	}
}

// readableOnHost is those of paths that are files with content on the
// host, which masking must empty. Some kernels have no /proc/kcore, so the
// test needs at least /proc/interrupts, which every kernel has.
func readableOnHost(t *testing.T, paths []string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		n, _ := f.Read(make([]byte, 1)) // one byte: /proc/kcore is the size of memory
		f.Close()
		if n == 1 {
			out = append(out, p)
		}
	}
	if !slices.Contains(out, "/proc/interrupts") {
		t.Fatalf("masked paths readable on the host %v lack /proc/interrupts", out)
	}
	return out
}

func execOut(t *testing.T, r *runtimetest.Runtime, id string, cmd ...string) string {
	t.Helper()
	resp, err := r.Client.Runtime.ExecSync(t.Context(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 30})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("exec %v in %s: %v (exit %d, stderr %s)", cmd, id, err, resp.GetExitCode(), resp.GetStderr())
	}
	return string(resp.Stdout)
}

// procStatus is a field of a status file (/proc/1/status: the container's
// process; /proc/self/status: an exec'd one) in the container.
func procStatus(t *testing.T, r *runtimetest.Runtime, id, file, field string) string {
	t.Helper()
	for _, line := range strings.Split(execOut(t, r, id, "cat", file), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in %s of %s", field, file, id)
	return ""
}
