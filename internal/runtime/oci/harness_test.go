package oci

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/monitor"
	"github.com/berth/berth/internal/runtime/spec"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/wait"
)

// The monitor binary and a busybox rootfs are built once per test run.
var (
	buildOnce  sync.Once
	monitorBin string
	rootfsDir  string
	buildErr   error
	sharedDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

func buildShared() {
	sharedDir, buildErr = os.MkdirTemp("", "berth-oci-test-")
	if buildErr != nil {
		return
	}
	monitorBin = filepath.Join(sharedDir, "berth-monitor")
	out, err := exec.Command("go", "build", "-o", monitorBin, "github.com/berth/berth/cmd/berth-monitor").CombinedOutput()
	if err != nil {
		buildErr = fmt.Errorf("build berth-monitor: %v\n%s", err, out)
		return
	}
	rootfsDir = filepath.Join(sharedDir, "rootfs")
	buildErr = makeBusyboxRootfs(rootfsDir)
}

// makeBusyboxRootfs lays out the host's static busybox with the applets
// the tests use, plus the mount points runc needs in a read-only rootfs.
func makeBusyboxRootfs(dir string) error {
	for _, d := range []string{"bin", "proc", "dev", "sys", "tmp", "etc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(hostcheck.BusyboxPath)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "busybox"), data, 0o755); err != nil {
		return err
	}
	for _, applet := range []string{"sh", "echo", "cat", "sleep", "head", "tr", "tty", "stty", "id", "true", "yes", "dd", "readlink", "hostname", "grep"} {
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", applet)); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "etc", "passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644)
}

// testEnv is a runtime over fresh state directories.
type testEnv struct {
	t        testing.TB
	rt       *Runc
	base     string
	stateDir string
	runcRoot string
	// cgroupParent is unique to the env, so concurrent test runs never
	// share a container cgroup (IDs like "c1" repeat).
	cgroupParent string
	// runtimes are every Runc made, closed after the test's own cleanups
	// (container deletions) have run.
	runtimes []*Runc
}

func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.BusyboxStatic)
	buildOnce.Do(buildShared)
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	base := t.TempDir()
	e := &testEnv{t: t, base: base, stateDir: filepath.Join(base, "state", "containers"), runcRoot: filepath.Join(base, "state", "runc"),
		cgroupParent: filepath.Join("/berth-oci-test", filepath.Base(filepath.Dir(base))+"-"+filepath.Base(base))}
	t.Cleanup(func() {
		for _, rt := range e.runtimes {
			rt.Close()
		}
	})
	e.rt = e.newRuntime()
	t.Cleanup(e.removeCgroupParent)
	return e
}

// removeCgroupParent removes the env's (by now empty) cgroup directories
// in every hierarchy, cgroup v1 or v2; runc delete removes only the leaves.
func (e *testEnv) removeCgroupParent() {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", e.cgroupParent))
	dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.cgroupParent))
	for _, d := range dirs {
		_ = os.Remove(d)
	}
}

// newRuntime is what a restarted runtime service would make: a new Runc
// over the same directories.
func (e *testEnv) newRuntime() *Runc {
	e.t.Helper()
	runcPath, err := hostcheck.RuncPath()
	if err != nil {
		e.t.Fatal(err)
	}
	rt, err := newRunc(RuncConfig{
		Binary: runcPath, Root: e.runcRoot, StateDir: e.stateDir, MonitorBinary: monitorBin,
		Logger: slog.New(slog.NewTextHandler(testWriter{e.t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.runtimes = append(e.runtimes, rt)
	return rt
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// containerOpts shapes a test container.
type containerOpts struct {
	args      []string
	terminal  bool
	stdin     bool
	stdinOnce bool
	resources *runtimeapi.LinuxContainerResources
	netns     string
}

// run makes a bundle whose spec comes from the real spec generator (a
// pod sandbox spec: own namespaces, no capabilities) and runs it.
func (e *testEnv) run(id string, o containerOpts) RunOptions {
	e.t.Helper()
	opts := e.createOptionsOnly(id, o)
	if _, err := e.rt.RunDetached(ctx(e.t), opts); err != nil {
		e.t.Fatalf("RunDetached %s: %v", id, err)
	}
	e.t.Cleanup(func() {
		// Best effort: a test that already deleted it gets NotFound.
		_ = e.rt.Delete(context.Background(), id)
	})
	return opts
}

func (e *testEnv) wait(id string) State {
	e.t.Helper()
	st, err := e.rt.Wait(ctx(e.t), id)
	if err != nil {
		e.t.Fatalf("Wait %s: %v", id, err)
	}
	return st
}

func (e *testEnv) state(id string) State {
	e.t.Helper()
	st, err := e.rt.State(ctx(e.t), id)
	if err != nil {
		e.t.Fatalf("State %s: %v", id, err)
	}
	return st
}

// ctx bounds a test step so a hang fails the test instead of the run; it
// is no assertion on duration.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// killMonitor SIGKILLs the monitor of container id and waits for its end.
func (e *testEnv) killMonitor(id string) monitor.Process {
	e.t.Helper()
	proc, err := monitor.ReadProcess(filepath.Join(e.stateDir, id, monitor.PidFile))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := syscall.Kill(proc.Pid, syscall.SIGKILL); err != nil {
		e.t.Fatal(err)
	}
	wait.Until(e.t, time.Minute, "the monitor's end", func() bool { return !proc.Alive() })
	return proc
}

func itoa(i int) string { return fmt.Sprint(i) }

// ioPipe is an in-memory pipe for feeding a container's stdin step by step.
func ioPipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }

// createOptionsOnly makes the bundle and RunOptions of a test
// container; its spec comes from the real generator over the shared
// read-only rootfs, with namespaces of its own, as a pod's would be: a
// network one (o.netns, else a new one), UTS (hostname testpod), IPC and PID.
func (e *testEnv) createOptionsOnly(id string, o containerOpts) RunOptions {
	e.t.Helper()
	bundle := filepath.Join(e.base, "bundles", id)
	for _, dir := range []string{bundle, filepath.Join(e.base, "logs")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			e.t.Fatal(err)
		}
	}
	s, err := spec.Generate(context.Background(), spec.Input{
		ID: id, SandboxID: id, Sandbox: e.standalonePod(),
		Container: &runtimeapi.ContainerConfig{
			Command: o.args, Tty: o.terminal,
			Linux: &runtimeapi.LinuxContainerConfig{Resources: o.resources, SecurityContext: &runtimeapi.LinuxContainerSecurityContext{ReadonlyRootfs: true}},
		},
		Image: &v1.ConfigFile{}, RootfsPath: rootfsDir,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	s.Hostname = "testpod"
	s.Linux.Namespaces = append(s.Linux.Namespaces,
		specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: o.netns},
		specs.LinuxNamespace{Type: specs.UTSNamespace}, specs.LinuxNamespace{Type: specs.IPCNamespace})
	return RunOptions{
		ID: id, BundleDir: bundle, Spec: s, LogPath: filepath.Join(e.base, "logs", id+".log"),
		Terminal: o.terminal, Stdin: o.stdin, StdinOnce: o.stdinOnce,
	}
}

// standalonePod is the pod config of a test container that stands alone:
// the generator is told the host's network and IPC and a PID namespace of
// the container's own, and the harness adds the rest.
func (e *testEnv) standalonePod() *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: e.cgroupParent,
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER,
		}},
	}}
}
