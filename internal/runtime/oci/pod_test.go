package oci

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/spec"
)

// TestPodContainerJoinsSandboxNamespaces runs the spec generator's output
// for a sandbox and an application container under real runc: the
// container shares the sandbox's network, UTS, IPC and PID namespaces and
// runs with RuntimeDefault seccomp and the default capabilities.
func TestPodContainerJoinsSandboxNamespaces(t *testing.T) {
	e := newTestEnv(t)
	e.run("sandbox", containerOpts{args: []string{"sleep", "1000"}})
	sandboxPid := e.state("sandbox").Pid

	podCfg := &runtimeapi.PodSandboxConfig{Hostname: "testpod", Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: e.cgroupParent}}
	s, err := spec.Generate(context.Background(), spec.Input{
		ID: "app", SandboxID: "sandbox", Sandbox: podCfg,
		Container: &runtimeapi.ContainerConfig{
			Command: []string{"sleep", "1000"},
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				ReadonlyRootfs: true,
				Seccomp:        &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			}},
		},
		Image:      &v1.ConfigFile{},
		RootfsPath: rootfsDir,
		SandboxPid: sandboxPid,
	})
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(e.base, "bundles", "app")
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.Create(ctx(t), CreateOptions{ID: "app", SandboxID: "sandbox", BundleDir: bundle, Spec: s}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.rt.Delete(context.Background(), "app") })

	execOut := func(args ...string) string {
		t.Helper()
		var out syncBuffer
		code, err := e.rt.Exec(ctx(t), "app", ExecOptions{Process: &specs.Process{Args: args, Cwd: "/", Env: []string{"PATH=/bin"}}, Stdout: &out, Stderr: &out})
		if err != nil || code != 0 {
			t.Fatalf("exec %v: code %d err %v out %q", args, code, err, out.String())
		}
		return strings.TrimSpace(out.String())
	}
	for _, ns := range []string{"net", "uts", "ipc", "pid"} {
		want, err := os.Readlink(filepath.Join("/proc", itoa(sandboxPid), "ns", ns))
		if err != nil {
			t.Fatal(err)
		}
		if got := execOut("readlink", "/proc/self/ns/"+ns); got != want {
			t.Errorf("%s namespace %s, sandbox's %s", ns, got, want)
		}
	}
	if got := execOut("hostname"); got != "testpod" {
		t.Errorf("hostname %q", got)
	}
	// Seccomp filter mode 2 and the default capability set (no CAP_SYS_ADMIN, bit 21).
	status := execOut("grep", "-E", "^(Seccomp|CapEff):", "/proc/self/status")
	if !strings.Contains(status, "Seccomp:\t2") || !strings.Contains(status, "CapEff:\t00000000a80425fb") {
		t.Errorf("container security status:\n%s", status)
	}
}

// TestRecursiveReadOnlyMount checks that an rro mount generated for runc
// makes sub-mounts read-only too, where a plain read-only bind does not.
func TestRecursiveReadOnlyMount(t *testing.T) {
	e := newTestEnv(t)
	host, err := spec.DetectHost(context.Background(), e.rt.cfg.Binary)
	if err != nil {
		t.Fatal(err)
	}
	if !host.RecursiveReadOnly {
		t.Fatalf("this runc does not offer rro; the tests need runc >= 1.1")
	}
	src := filepath.Join(e.base, "vol")
	sub := filepath.Join(src, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(sub, syscall.MNT_DETACH) })
	e.run("sandbox", containerOpts{args: []string{"sleep", "1000"}})
	for _, tc := range []struct {
		id        string
		recursive bool
		wantCode  int32
	}{{"plain-ro", false, 0}, {"rro", true, 1}} {
		s, err := spec.Generate(context.Background(), spec.Input{
			ID: tc.id, SandboxID: "sandbox", Sandbox: &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: e.cgroupParent}},
			Container: &runtimeapi.ContainerConfig{
				Command: []string{"sleep", "1000"},
				Mounts:  []*runtimeapi.Mount{{ContainerPath: "/vol", HostPath: src, Readonly: true, RecursiveReadOnly: tc.recursive}},
				Linux:   &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{ReadonlyRootfs: true}},
			},
			Image: &v1.ConfigFile{}, RootfsPath: rootfsDir, SandboxPid: e.state("sandbox").Pid, Host: host,
		})
		if err != nil {
			t.Fatal(err)
		}
		bundle := filepath.Join(e.base, "bundles", tc.id)
		if err := os.MkdirAll(bundle, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := e.rt.Create(ctx(t), CreateOptions{ID: tc.id, BundleDir: bundle, Spec: s}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.rt.Delete(context.Background(), tc.id) })
		var out syncBuffer
		code, err := e.rt.Exec(ctx(t), tc.id, ExecOptions{
			Process: &specs.Process{Args: []string{"sh", "-c", "echo x > /vol/sub/f"}, Cwd: "/", Env: []string{"PATH=/bin"}},
			Stderr:  &out,
		})
		if err != nil || code != tc.wantCode {
			t.Errorf("%s: write into the sub-mount: code %d (want %d) err %v stderr %q", tc.id, code, tc.wantCode, err, out.String())
		}
	}
}
