package oci

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/monitor"
	"github.com/berth/berth/internal/runtime/nspin"
	"github.com/berth/berth/internal/runtime/spec"
	"github.com/berth/berth/internal/testkit/testio"
)

// startPause pins a pod's network, UTS and IPC namespaces and starts its
// pause process (busybox sleep here) under a monitor, as RunPodSandbox
// does; it returns the pinned paths and the pause process's pid.
func (e *testEnv) startPause(id string) (map[nspin.Type]string, int) {
	e.t.Helper()
	dir := filepath.Join(e.base, "pins")
	pins := map[nspin.Type]string{nspin.Net: dir + "/net-" + id, nspin.UTS: dir + "/uts-" + id, nspin.IPC: dir + "/ipc-" + id}
	if err := nspin.Pin(pins, "testpod"); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		for _, p := range pins {
			_ = nspin.Unpin(p)
		}
	})
	proc, err := spec.GeneratePause(context.Background(), spec.PauseInput{
		ID: id, Config: e.pod(), RootfsPath: rootfsDir, Namespaces: pins,
		Image: &v1.ConfigFile{Config: v1.Config{Entrypoint: []string{"sleep", "1000"}, Env: []string{"PATH=/bin"}}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	pid, err := e.rt.RunDetached(ctx(e.t), RunOptions{ID: id, SandboxID: id, Pause: proc})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = e.rt.Delete(context.Background(), id) })
	return pins, pid
}

func (e *testEnv) pod() *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{Hostname: "testpod", Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: e.cgroupParent}}
}

// pauseCgroups are the pause process id's cgroup directories.
func (e *testEnv) pauseCgroups(id string) []string {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", e.cgroupParent, id))
	return append(dirs, filepath.Join("/sys/fs/cgroup", e.cgroupParent, id))
}

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// procStatus returns the lines of /proc/PID/status named in keys.
func procStatus(t *testing.T, pid int, keys ...string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if slices.Contains(keys, k) {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// TestPodContainerJoinsPauseProcess runs a pod as RunPodSandbox and
// CreateContainer make it, under real runc: the pause process, started by
// its monitor without runc, is PID 1 of the pod's PID namespace, confined
// (uid 65535, no capabilities even in its bounding set, no_new_privs,
// chrooted, in its cgroup), and the container shares its PID namespace and
// the pod's pinned network, UTS and IPC ones, with RuntimeDefault seccomp
// and the default capabilities. Deleting the pause process ends the pod's
// PID namespace and removes its cgroups.
func TestPodContainerJoinsPauseProcess(t *testing.T) {
	e := newTestEnv(t)
	pins, pausePid := e.startPause("sandbox")
	if st := e.state("sandbox"); st.Status != StatusRunning || st.Pid != pausePid {
		t.Fatalf("pause process state %+v, started as %d", st, pausePid)
	}
	got := procStatus(t, pausePid, "Uid", "Gid", "Groups", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs", "NSpid")
	want := map[string]string{
		"Uid": "65535\t65535\t65535\t65535", "Gid": "65535\t65535\t65535\t65535", "Groups": "",
		"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapBnd": "0000000000000000", "NoNewPrivs": "1",
		"NSpid": itoa(pausePid) + "\t1",
	}
	if !maps.Equal(got, want) {
		t.Errorf("pause process status %v, want %v", got, want)
	}
	if root, err := os.Readlink(filepath.Join("/proc", itoa(pausePid), "root")); err != nil || root != rootfsDir {
		t.Errorf("pause process root %q (%v), want %q", root, err, rootfsDir)
	}
	if left := existing(e.pauseCgroups("sandbox")); len(left) == 0 {
		t.Error("the pause process has no cgroup of its own")
	}
	cgroups, _ := os.ReadFile(filepath.Join("/proc", itoa(pausePid), "cgroup"))
	if !strings.Contains(string(cgroups), e.cgroupParent+"/sandbox\n") {
		t.Errorf("pause process cgroups:\n%s", cgroups)
	}

	s, err := spec.Generate(context.Background(), spec.Input{
		ID: "app", SandboxID: "sandbox", Sandbox: e.pod(),
		Container: &runtimeapi.ContainerConfig{
			Command: []string{"sleep", "1000"},
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				ReadonlyRootfs: true,
				Seccomp:        &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			}},
		},
		Image: &v1.ConfigFile{}, RootfsPath: rootfsDir, SandboxPid: pausePid,
		NetNSPath: pins[nspin.Net], UTSNSPath: pins[nspin.UTS], IPCNSPath: pins[nspin.IPC],
	})
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(e.base, "bundles", "app")
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.RunDetached(ctx(t), RunOptions{ID: "app", SandboxID: "sandbox", BundleDir: bundle, Spec: s}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.rt.Delete(context.Background(), "app") })

	execOut := func(args ...string) string {
		t.Helper()
		var out testio.SyncBuffer
		code, err := e.rt.Exec(ctx(t), "app", ExecOptions{Process: &specs.Process{Args: args, Cwd: "/", Env: []string{"PATH=/bin"}}, Stdout: &out, Stderr: &out})
		if err != nil || code != 0 {
			t.Fatalf("exec %v: code %d err %v out %q", args, code, err, out.String())
		}
		return strings.TrimSpace(out.String())
	}
	for _, ns := range []string{"net", "uts", "ipc", "pid"} {
		want, err := os.Readlink(filepath.Join("/proc", itoa(pausePid), "ns", ns))
		if err != nil {
			t.Fatal(err)
		}
		if got := execOut("readlink", "/proc/self/ns/"+ns); got != want {
			t.Errorf("%s namespace %s, pause process's %s", ns, got, want)
		}
	}
	if got := execOut("hostname"); got != "testpod" {
		t.Errorf("hostname %q", got)
	}
	if got := strings.TrimRight(execOut("cat", "/proc/1/cmdline"), "\x00"); got != "/bin/sleep\x001000" {
		t.Errorf("PID 1 of the pod is %q, not the pause process", got)
	}
	// Seccomp filter mode 2 and the default capability set (no CAP_SYS_ADMIN, bit 21).
	secStatus := execOut("grep", "-E", "^(Seccomp|CapEff):", "/proc/self/status")
	if !strings.Contains(secStatus, "Seccomp:\t2") || !strings.Contains(secStatus, "CapEff:\t00000000a80425fb") {
		t.Errorf("container security status:\n%s", secStatus)
	}

	if err := e.rt.Delete(ctx(t), "sandbox"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.State(ctx(t), "sandbox"); status.Code(err) != codes.NotFound {
		t.Errorf("state of the deleted pause process: %v", err)
	}
	// The PID namespace's init is gone, so the kernel killed the container too.
	if st, err := e.rt.Wait(ctx(t), "app"); err != nil || st.Status != StatusStopped {
		t.Errorf("container after its pause process's end: %+v, %v", st, err)
	}
	if left := existing(e.pauseCgroups("sandbox")); len(left) != 0 {
		t.Errorf("pause process cgroups left: %v", left)
	}
}

// TestPauseProcessWithoutMonitorIsEndedByDelete kills a pause process's
// monitor: the pause process runs on, is reported broken, and Delete
// ends it through its cgroups and removes them.
func TestPauseProcessWithoutMonitorIsEndedByDelete(t *testing.T) {
	e := newTestEnv(t)
	_, pausePid := e.startPause("sandbox")
	e.killMonitor("sandbox")
	st := e.state("sandbox")
	if st.Status != StatusUnknown || !strings.Contains(st.Broken, "monitor is gone") {
		t.Fatalf("state without a monitor: %+v", st)
	}
	pause, err := monitor.ProcessOf(pausePid)
	if err != nil {
		t.Fatalf("the pause process died with its monitor: %v", err)
	}
	if err := e.rt.Delete(ctx(t), "sandbox"); err != nil {
		t.Fatal(err)
	}
	if pause.Alive() {
		t.Error("the pause process outlived Delete")
	}
	if left := existing(e.pauseCgroups("sandbox")); len(left) != 0 {
		t.Errorf("pause process cgroups left: %v", left)
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
		if _, err := e.rt.RunDetached(ctx(t), RunOptions{ID: tc.id, BundleDir: bundle, Spec: s}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.rt.Delete(context.Background(), tc.id) })
		var out testio.SyncBuffer
		code, err := e.rt.Exec(ctx(t), tc.id, ExecOptions{
			Process: &specs.Process{Args: []string{"sh", "-c", "echo x > /vol/sub/f"}, Cwd: "/", Env: []string{"PATH=/bin"}},
			Stderr:  &out,
		})
		if err != nil || code != tc.wantCode {
			t.Errorf("%s: write into the sub-mount: code %d (want %d) err %v stderr %q", tc.id, code, tc.wantCode, err, out.String())
		}
	}
}
