package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/berth/berth/internal/runtime/cgroupstats"
	"github.com/berth/berth/internal/runtime/monitor"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/registry"
	"github.com/berth/berth/internal/testkit/wait"
)

// e2e is a real `berth runtime` (runc, berth-monitor, CNI plugins, overlay
// image store) served in-process on a unix socket, pulling from a loopback
// registry, driven through the CRI gRPC clients.
type e2e struct {
	t       *testing.T
	cfg     Config
	subnet  *net.IPNet
	bridge  string
	cancel  context.CancelFunc
	done    chan error
	rt      runtimeapi.RuntimeServiceClient
	img     runtimeapi.ImageServiceClient
	conn    *grpc.ClientConn
	logsDir string
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.CNIPlugins, hostcheck.BusyboxStatic, hostcheck.Overlayfs, hostcheck.Gcc)
	dir := t.TempDir()
	monitor := filepath.Join(dir, "berth-monitor")
	if out, err := exec.Command("go", "build", "-o", monitor, "github.com/berth/berth/cmd/berth-monitor").CombinedOutput(); err != nil {
		t.Fatalf("build berth-monitor: %v\n%s", err, out)
	}
	set, err := images.Catalogue(t.Context(), images.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.Start(t)
	registry.Push(t, reg, set)

	// A bridge and subnet of this test's own, so it never meets a runtime
	// running on the host or another test.
	e := &e2e{t: t, bridge: fmt.Sprintf("bte%d", os.Getpid()%100000), logsDir: filepath.Join(dir, "logs")}
	_, e.subnet, _ = net.ParseCIDR(fmt.Sprintf("10.203.%d.0/24", os.Getpid()%250))
	confDir := filepath.Join(dir, "net.d")
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"e2e","plugins":[{"type":"bridge","bridge":%q,"isGateway":true,
		"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":%q}]]}},{"type":"portmap","capabilities":{"portMappings":true}}]}`,
		e.bridge, filepath.Join(dir, "ipam"), e.subnet.String())
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "10-e2e.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	e.cfg = Config{
		Root: filepath.Join(dir, "root"), StateDir: filepath.Join(dir, "state"),
		Listen: "unix://" + filepath.Join(dir, "cri.sock"), MonitorBinary: monitor, CNIConfDir: confDir,
		Mirrors: map[string][]string{"docker.io": {"http://" + reg}}, Insecure: []string{reg},
		PauseImage: images.Pause, NRISocket: filepath.Join(dir, "nri.sock"),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	t.Cleanup(e.cleanup)
	e.start()
	return e
}

// start runs the service and waits until it answers Version.
func (e *e2e) start() {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- Run(ctx, e.cfg) }()
	conn, err := grpc.NewClient(e.cfg.Listen, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.conn, e.rt, e.img = conn, runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	wait.UntilCtx(e.t, time.Minute, "the runtime to answer Version", func(ctx context.Context) error {
		select {
		case err := <-e.done:
			e.t.Fatalf("runtime exited at start: %v", err)
		default:
		}
		_, err := e.rt.Version(ctx, &runtimeapi.VersionRequest{})
		return err
	})
}

// stop shuts the service down as SIGTERM does; containers keep running.
func (e *e2e) stop() {
	e.t.Helper()
	if e.cancel == nil {
		return
	}
	e.cancel()
	if err := <-e.done; err != nil {
		e.t.Errorf("Run returned %v", err)
	}
	e.conn.Close()
	e.cancel = nil
}

func (e *e2e) cleanup() {
	if e.cancel == nil {
		e.start()
	}
	ctx := context.Background()
	if list, err := e.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err == nil {
		for _, sb := range list.Items {
			if _, err := e.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
				e.t.Errorf("cleanup: remove sandbox: %v", err)
			}
		}
	}
	e.stop()
	_ = exec.Command("ip", "link", "del", e.bridge).Run()
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), e.cfg.StateDir) || strings.Contains(string(mounts), e.cfg.Root) {
		e.t.Errorf("mounts left under the runtime's dirs")
	}
}

func (e *e2e) runSandbox(name string) string {
	e.t.Helper()
	resp, err := e.rt.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: e.sandboxConfig(name)})
	if err != nil {
		e.t.Fatalf("RunPodSandbox: %v", err)
	}
	return resp.PodSandboxId
}

func (e *e2e) sandboxConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "e2e", Uid: name + "-uid"},
		Hostname:     name,
		LogDirectory: filepath.Join(e.logsDir, name),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
}

func (e *e2e) runContainer(sb, name string, cmd ...string) string {
	e.t.Helper()
	ctx := context.Background()
	resp, err := e.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb, SandboxConfig: e.sandboxConfig("web"),
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: images.Busybox},
			Command: cmd, LogPath: name + ".log", Linux: &runtimeapi.LinuxContainerConfig{},
		},
	})
	if err != nil {
		e.t.Fatalf("CreateContainer %s: %v", name, err)
	}
	if _, err := e.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.ContainerId}); err != nil {
		e.t.Fatalf("StartContainer %s: %v", name, err)
	}
	return resp.ContainerId
}

func (e *e2e) status(id string) *runtimeapi.ContainerStatusResponse {
	e.t.Helper()
	resp, err := e.rt.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		e.t.Fatalf("ContainerStatus: %v", err)
	}
	return resp
}

// waitExited polls until the container has exited. (Polling, not the
// event stream: the server subscribes a stream only once its handler runs,
// so an exit right after the call could otherwise be missed.)
func (e *e2e) waitExited(id string) *runtimeapi.ContainerStatus {
	e.t.Helper()
	var st *runtimeapi.ContainerStatus
	wait.UntilNil(e.t, 2*time.Minute, "container "+id+" to exit", func() error {
		if st = e.status(id).Status; st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			return fmt.Errorf("state %v", st.State)
		}
		return nil
	})
	return st
}

func (e *e2e) execSync(id string, cmd ...string) string {
	e.t.Helper()
	resp, err := e.rt.ExecSync(context.Background(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 30})
	if err != nil || resp.ExitCode != 0 {
		e.t.Fatalf("ExecSync %v: %v %+v", cmd, err, resp)
	}
	return string(resp.Stdout)
}

func TestRuntimeEndToEndWithRestart(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	if _, err := e.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: images.Busybox}}); err != nil {
		t.Fatalf("PullImage: %v", err)
	}
	sb := e.runSandbox("web")
	sst, err := e.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
	if err != nil || !e.subnet.Contains(net.ParseIP(sst.Status.Network.Ip)) {
		t.Fatalf("sandbox IP %v not in %s: %v", sst.GetStatus().GetNetwork(), e.subnet, err)
	}
	ip := sst.Status.Network.Ip
	pausePid := e.sandboxPid(sb)

	long := e.runContainer(sb, "long", "sh", "-c", "echo hello-log; exec sleep 100000")
	if out := e.execSync(long, "ip", "-4", "addr", "show", "eth0"); !strings.Contains(out, ip+"/24") {
		t.Fatalf("eth0 in the container lacks %s:\n%s", ip, out)
	}
	if out := e.execSync(long, "hostname"); out != "web\n" {
		t.Fatalf("hostname %q", out)
	}
	e.checkStreamingExec(long)
	short := e.runContainer(sb, "short", "sh", "-c", "echo bye >&2; exit 3")
	st := e.waitExited(short)
	if st.ExitCode != 3 || st.Reason != "Error" {
		t.Fatalf("short: %+v", st)
	}
	logPath := e.status(long).Status.LogPath
	e.waitForLog(logPath, " stdout F hello-log")
	e.waitForLog(e.status(short).Status.LogPath, " stderr F bye")
	doomed := e.runContainer(sb, "doomed", "sleep", "100000")
	doomedPid := pidOf(t, e.status(doomed))

	_, err = e.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "x"}, Image: &runtimeapi.ImageSpec{Image: "berth-test/absent:1"}}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("absent image: %v", err)
	}

	// Restart: the service goes away, containers stay; one dies meanwhile.
	e.stop()
	if err := syscall.Kill(doomedPid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill doomed container: %v", err)
	}
	e.start()

	if got := e.status(long).Status; got.State != runtimeapi.ContainerState_CONTAINER_RUNNING || got.LogPath != logPath {
		t.Fatalf("long after restart: %+v", got)
	}
	if out := e.execSync(long, "echo", "still-here"); out != "still-here\n" {
		t.Fatalf("exec after restart: %q", out)
	}
	if got := e.status(short).Status; got.State != runtimeapi.ContainerState_CONTAINER_EXITED || got.ExitCode != 3 {
		t.Fatalf("short after restart: %+v", got)
	}
	if got := e.waitExited(doomed); got.ExitCode != 137 {
		t.Fatalf("container killed while the runtime was down: %+v", got)
	}
	sst, _ = e.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
	if sst.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || sst.Status.Network.Ip != ip {
		t.Fatalf("sandbox after restart: %+v", sst.GetStatus())
	}
	// The pod shares a PID namespace (CRI's default): its pause process ran on.
	if got := e.sandboxPid(sb); got != pausePid || syscall.Kill(pausePid, 0) != nil {
		t.Fatalf("pause process %d before the restart, %d after", pausePid, got)
	}
	if out := e.execSync(long, "cat", "/proc/1/comm"); out != "pause\n" {
		t.Fatalf("PID 1 of the pod after the restart: %q", out)
	}

	// Separately, one container's monitor is killed under a live runtime.
	lost := e.runContainer(sb, "lost", "sleep", "100000")
	if err := syscall.Kill(e.monitorPid(lost), syscall.SIGKILL); err != nil {
		t.Fatalf("kill monitor: %v", err)
	}
	if got := e.waitExited(lost); got.Reason != "Unknown" || got.ExitCode == 0 {
		t.Fatalf("container whose monitor was killed: %+v", got)
	}
	e.checkPauseMonitorKilled()

	if _, err := e.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: long, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	if got := e.status(long).Status; got.State != runtimeapi.ContainerState_CONTAINER_EXITED || got.ExitCode != 137 && got.ExitCode != 143 {
		t.Fatalf("long after stop: %+v", got)
	}
	if _, err := e.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	if syscall.Kill(pausePid, 0) == nil {
		t.Errorf("pause process %d outlived its sandbox", pausePid)
	}
	for _, d := range []string{"netns", "utsns", "ipcns", "sandboxes", "containers", "bundles", "monitors"} {
		if entries, _ := os.ReadDir(filepath.Join(e.cfg.StateDir, d)); len(entries) != 0 {
			t.Errorf("%s left after removal: %v", d, entries)
		}
	}
}

func (e *e2e) waitForLog(path, want string) {
	e.t.Helper()
	// The monitor writes asynchronously.
	wait.UntilNil(e.t, time.Minute, fmt.Sprintf("%s to contain %q", path, want), func() error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), want) {
			return fmt.Errorf("log holds %q", data)
		}
		return nil
	})
}

// checkPauseMonitorKilled kills the monitor of a pod's pause process under
// a live runtime: the pod becomes not ready, and its removal ends the pause
// process, which outlived its monitor.
func (e *e2e) checkPauseMonitorKilled() {
	e.t.Helper()
	ctx := context.Background()
	sb := e.runSandbox("orphan")
	pause, err := monitor.ProcessOf(e.sandboxPid(sb))
	if err != nil {
		e.t.Fatal(err)
	}
	mon := e.monitorPid(sb)
	if err := syscall.Kill(mon, syscall.SIGKILL); err != nil {
		e.t.Fatalf("kill the pause process's monitor: %v", err)
	}
	// The runtime learns it from the monitor's socket closing.
	wait.UntilCtx(e.t, time.Minute, "the sandbox to become not ready after its pause's monitor was killed", func(ctx context.Context) error {
		st, err := e.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
		if err != nil {
			return err
		}
		if st.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			return fmt.Errorf("state %v", st.Status.State)
		}
		return nil
	})
	// Orphaned, it is init's child now; a zombie is not alive (this
	// machine's init may be slow to reap).
	if !pause.Alive() {
		e.t.Fatal("the pause process died with its monitor")
	}
	if _, err := e.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
		e.t.Fatal(err)
	}
	if pause.Alive() {
		e.t.Fatalf("pause process %d outlived the removal of its sandbox", pause.Pid)
	}
}

// monitorPid is the pid of the monitor of container (or pause process) id.
func (e *e2e) monitorPid(id string) int {
	e.t.Helper()
	line, err := os.ReadFile(filepath.Join(e.cfg.StateDir, "monitors", id, "monitor.pid"))
	if err != nil {
		e.t.Fatalf("monitor pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(line))[0])
	if err != nil {
		e.t.Fatal(err)
	}
	return pid
}

// sandboxPid is the sandbox's pause process, from its verbose status.
func (e *e2e) sandboxPid(id string) int {
	e.t.Helper()
	st, err := e.rt.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return pidInInfo(e.t, st.Info)
}

func pidOf(t *testing.T, st *runtimeapi.ContainerStatusResponse) int {
	t.Helper()
	return pidInInfo(t, st.Info)
}

// pidInInfo reads the pid a verbose CRI status carries.
func pidInInfo(t testing.TB, info map[string]string) int {
	t.Helper()
	var v struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(info["info"]), &v); err != nil || v.Pid <= 0 {
		t.Fatalf("no pid in verbose status %v: %v", info, err)
	}
	return v.Pid
}

// checkStreamingExec runs commands through the CRI streaming server with
// client-go's SPDY executor, as kubectl exec does through the kubelet.
func (e *e2e) checkStreamingExec(id string) {
	e.t.Helper()
	ctx := context.Background()
	run := func(stdin string, cmd ...string) (string, string, error) {
		resp, err := e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd, Stdin: stdin != "", Stdout: true, Stderr: true})
		if err != nil {
			e.t.Fatalf("Exec: %v", err)
		}
		u, err := url.Parse(resp.Url)
		if err != nil || !net.ParseIP(u.Hostname()).IsLoopback() {
			e.t.Fatalf("streaming URL %q is not on loopback: %v", resp.Url, err)
		}
		exe, err := remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
		if err != nil {
			e.t.Fatal(err)
		}
		var stdout, stderr strings.Builder
		opts := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}
		if stdin != "" {
			opts.Stdin = strings.NewReader(stdin)
		}
		err = exe.StreamWithContext(ctx, opts)
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := run("", "sh", "-c", "echo streamed; echo oops >&2; exit 4")
	var exitErr utilexec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 4 || out != "streamed\n" || errOut != "oops\n" {
		e.t.Fatalf("streamed exec: out=%q err=%q %v", out, errOut, err)
	}
	out, _, err = run("from-stdin\n", "cat")
	if err != nil || out != "from-stdin\n" {
		e.t.Fatalf("streamed exec with stdin: %q %v", out, err)
	}
}

// TestCreatedContainerRunsOnlyAtStart: a created container has no monitor
// and no runc state, survives a restart of the runtime as created, takes a
// resource update into the spec it then starts with, and one never started
// stops as a no-op and is removed without a trace.
func TestCreatedContainerRunsOnlyAtStart(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	if _, err := e.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: images.Busybox}}); err != nil {
		t.Fatalf("PullImage: %v", err)
	}
	sb := e.runSandbox("lazy")
	create := func(name string) string {
		resp, err := e.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, SandboxConfig: e.sandboxConfig("lazy"),
			Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: images.Busybox},
				Command: []string{"sleep", "100000"}, LogPath: name + ".log", Linux: &runtimeapi.LinuxContainerConfig{}}})
		if err != nil {
			t.Fatalf("CreateContainer %s: %v", name, err)
		}
		return resp.ContainerId
	}
	limited, idle := create("limited"), create("idle")
	checkCreated := func(when string) {
		t.Helper()
		for _, id := range []string{limited, idle} {
			if st := e.status(id).Status; st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
				t.Fatalf("%s: %s is %s, want created", when, id, st.State)
			}
			e.requireNoTask(id)
			if _, err := os.Stat(filepath.Join(e.cfg.StateDir, "bundles", id, "config.json")); err != nil {
				t.Fatalf("%s: the spec of %s: %v", when, id, err)
			}
		}
	}
	checkCreated("after create")
	const limit = 96 << 20
	if _, err := e.rt.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: limited,
		Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: limit}}); err != nil {
		t.Fatalf("UpdateContainerResources of a created container: %v", err)
	}

	// The service goes away without a word to anything and comes back.
	e.stop()
	e.start()
	checkCreated("after restart")

	if _, err := e.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: idle, Timeout: 5}); err != nil {
		t.Fatalf("StopContainer of a created container: %v", err)
	}
	checkCreated("after stopping one")
	if _, err := e.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: idle}); err != nil {
		t.Fatalf("RemoveContainer of a created container: %v", err)
	}
	if _, err := e.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: idle}); status.Code(err) != codes.NotFound {
		t.Fatalf("status of a removed container: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.StateDir, "bundles", idle)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("bundle of a removed container: %v", err)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), idle) {
		t.Fatal("rootfs of a removed container still mounted")
	}

	if _, err := e.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: limited}); err != nil {
		t.Fatalf("StartContainer after restart: %v", err)
	}
	st := e.status(limited)
	if st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after start: %+v", st.Status)
	}
	sample, err := cgroupstats.NewHost().ReadPid(pidOf(t, st))
	if err != nil {
		t.Fatal(err)
	}
	if sample.Memory.Limit != limit {
		t.Fatalf("memory limit of the started container %d, want the update's %d", sample.Memory.Limit, limit)
	}
}

// requireNoTask fails unless the container has no monitor (state dir or
// process) and runc has no state for it.
func (e *e2e) requireNoTask(id string) {
	e.t.Helper()
	for _, dir := range []string{filepath.Join(e.cfg.StateDir, "monitors", id), filepath.Join(e.cfg.StateDir, "runc", id)} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			e.t.Fatalf("%s exists for a container not started: %v", dir, err)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if cmdline, err := os.ReadFile(p); err == nil && strings.Contains(string(cmdline), id) {
			e.t.Fatalf("a process runs for a container not started: %s %q", p, cmdline)
		}
	}
}
