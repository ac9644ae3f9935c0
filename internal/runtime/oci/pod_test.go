package oci

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

	podCfg := &runtimeapi.PodSandboxConfig{Hostname: "testpod"}
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
	if err := e.rt.Create(ctx(t), CreateOptions{ID: "app", SandboxID: "sandbox", BundleDir: bundle, Spec: s}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.rt.Delete(context.Background(), "app") })
	if err := e.rt.Start(ctx(t), "app"); err != nil {
		t.Fatal(err)
	}

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
