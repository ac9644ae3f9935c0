package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/wait"
)

const testImage = "registry.example/busybox:1"

// harness is a Server over a real unix socket with fake OCI, image and
// network parts that survive a server restart, like monitors do.
type harness struct {
	t        *testing.T
	stateDir string
	oci      *fakeOCI
	images   *fakeImages
	net      *fakeNetwork
	specs    *fakeSpecs
	cgroups  CgroupReader // nil: the host's
	nri      NRI          // nil: none
	handlers []string     // Config.RuntimeHandlers
	srv      *Server
	metrics  *Metrics // registered on registry, kept across restarts
	registry *prometheus.Registry
	grpc     *grpc.Server
	client   runtimeapi.RuntimeServiceClient
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	hostcheck.Require(t, hostcheck.Root) // netns and shm mounts
	dir := t.TempDir()
	h := &harness{
		t: t, stateDir: filepath.Join(dir, "state"), oci: newFakeOCI(),
		images:  newFakeImages(filepath.Join(dir, "rootfs"), DefaultPauseImage, testImage),
		net:     newFakeNetwork(),
		specs:   &fakeSpecs{},
		metrics: NewMetrics(), registry: prometheus.NewRegistry(),
	}
	if err := h.metrics.Register(h.registry); err != nil {
		t.Fatal(err)
	}
	h.start()
	t.Cleanup(h.removeAll)
	return h
}

// removeAll removes every sandbox so no mount outlives the test.
func (h *harness) removeAll() {
	if h.grpc == nil {
		h.start()
	}
	ctx := context.Background()
	list, err := h.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		h.t.Error(err)
	}
	for _, sb := range list.GetItems() {
		if _, err := h.client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			h.t.Errorf("cleanup of sandbox %s: %v", sb.Id, err)
		}
	}
	h.stop()
}

func (h *harness) start() {
	h.t.Helper()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := New(context.Background(), Config{
		StateDir: h.stateDir, OCI: h.oci, Features: Features{SupplementalGroupsPolicy: true}, Images: h.images, Specs: h.specs, Network: h.net, Cgroups: h.cgroups, NRI: h.nri,
		RuntimeHandlers: h.handlers, Metrics: h.metrics, Logger: log,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	sock := filepath.Join(h.t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		h.t.Fatal(err)
	}
	g := grpc.NewServer(GRPCServerOptions(log, h.metrics)...)
	runtimeapi.RegisterRuntimeServiceServer(g, srv)
	go g.Serve(lis)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		h.t.Fatal(err)
	}
	h.srv, h.grpc, h.client = srv, g, runtimeapi.NewRuntimeServiceClient(conn)
}

func (h *harness) stop() {
	if h.grpc != nil {
		h.grpc.Stop()
		h.srv.Close()
		h.grpc = nil
	}
}

func (h *harness) restart() {
	h.stop()
	h.start()
}

func sandboxConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
		Hostname:    name,
		Labels:      map[string]string{"app": name},
		Annotations: map[string]string{"note": "kept"},
		DnsConfig:   &runtimeapi.DNSConfig{Servers: []string{"10.0.0.10"}, Searches: []string{"svc.local"}},
	}
}

func containerConfig(name string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: testImage},
		Command:  []string{"sh"},
		Labels:   map[string]string{"c": name},
		LogPath:  name + ".log",
	}
}

func (h *harness) runSandbox(name string) (string, *runtimeapi.PodSandboxConfig) {
	h.t.Helper()
	cfg := sandboxConfig(name)
	cfg.LogDirectory = filepath.Join(h.t.TempDir(), "logs")
	resp, err := h.client.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		h.t.Fatalf("RunPodSandbox: %v", err)
	}
	return resp.PodSandboxId, cfg
}

func (h *harness) createContainer(sbID string, sbCfg *runtimeapi.PodSandboxConfig, name string) string {
	h.t.Helper()
	resp, err := h.client.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{
		PodSandboxId: sbID, Config: containerConfig(name), SandboxConfig: sbCfg,
	})
	if err != nil {
		h.t.Fatalf("CreateContainer: %v", err)
	}
	return resp.ContainerId
}

func (h *harness) startContainer(id string) {
	h.t.Helper()
	if _, err := h.client.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		h.t.Fatalf("StartContainer: %v", err)
	}
}

func (h *harness) containerStatus(id string) *runtimeapi.ContainerStatus {
	h.t.Helper()
	resp, err := h.client.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		h.t.Fatalf("ContainerStatus: %v", err)
	}
	return resp.Status
}

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want code %s", err, code)
	}
}

func TestVersionStatusAndConfig(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	v, err := h.client.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if v.RuntimeName != "berth" || v.RuntimeApiVersion != "v1" || v.RuntimeVersion == "" {
		t.Fatalf("Version = %+v", v)
	}
	st, err := h.client.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	ready := map[string]bool{}
	for _, c := range st.Status.Conditions {
		ready[c.Type] = c.Status
	}
	if !ready[runtimeapi.RuntimeReady] || !ready[runtimeapi.NetworkReady] || st.Info["config"] == "" ||
		!st.Features.GetSupplementalGroupsPolicy() || st.RuntimeHandlers[0].Features.GetRecursiveReadOnlyMounts() {
		t.Fatalf("Status = %+v", st)
	}
	rc, err := h.client.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if err != nil || rc.Linux.CgroupDriver != runtimeapi.CgroupDriver_CGROUPFS {
		t.Fatalf("RuntimeConfig = %v, %v", rc, err)
	}
	_, err = h.client.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{
		RuntimeConfig: &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: "nonsense"}}})
	wantCode(t, err, codes.InvalidArgument)
}

func TestSandboxLifecycle(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	id, cfg := h.runSandbox("web")

	st, err := h.client.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	s := st.Status
	if s.State != runtimeapi.PodSandboxState_SANDBOX_READY || s.Network.Ip != "10.0.0.1" ||
		s.Labels["app"] != "web" || s.Annotations["note"] != "kept" || s.Metadata.Name != "web" || st.Info["info"] == "" {
		t.Fatalf("status = %+v", s)
	}
	resolv, _ := os.ReadFile(filepath.Join(h.stateDir, "sandboxes", id, "resolv.conf"))
	if string(resolv) != "search svc.local\nnameserver 10.0.0.10\n" {
		t.Fatalf("resolv.conf = %q", resolv)
	}
	hosts, _ := os.ReadFile(filepath.Join(h.stateDir, "sandboxes", id, "hosts"))
	if !contains(string(hosts), "10.0.0.1\tweb") {
		t.Fatalf("hosts = %q", hosts)
	}
	if _, err := os.Stat(filepath.Join(h.stateDir, "netns", id)); err != nil {
		t.Fatalf("netns not pinned: %v", err)
	}

	_, err = h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	wantCode(t, err, codes.AlreadyExists)

	other, _ := h.runSandbox("db")
	list, err := h.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "db"}}})
	if err != nil || len(list.Items) != 1 || list.Items[0].Id != other {
		t.Fatalf("label filter: %v %v", list, err)
	}
	list, _ = h.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: id[:13]}})
	if len(list.Items) != 1 || list.Items[0].Id != id {
		t.Fatalf("prefix filter: %v", list)
	}

	for range 2 {
		if _, err := h.client.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatalf("StopPodSandbox: %v", err)
		}
	}
	st, _ = h.client.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if st.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("state after stop = %s", st.Status.State)
	}
	if _, err := os.Stat(filepath.Join(h.stateDir, "netns", id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("netns left after stop: %v", err)
	}
	list, _ = h.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}})
	if len(list.Items) != 1 || list.Items[0].Id != other {
		t.Fatalf("state filter: %v", list)
	}

	for range 2 {
		if _, err := h.client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatalf("RemovePodSandbox: %v", err)
		}
	}
	_, err = h.client.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	wantCode(t, err, codes.NotFound)
	if _, err := os.Stat(filepath.Join(h.stateDir, "sandboxes", id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("sandbox dir left: %v", err)
	}
	if h.net.count() != 1 || h.images.inUse() != 1 {
		t.Fatalf("attached=%d rootfs=%d, want only the other sandbox's", h.net.count(), h.images.inUse())
	}
	// The name is free again.
	if _, err := h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err != nil {
		t.Fatalf("re-run after remove: %v", err)
	}
}

func TestContainerLifecycle(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := h.subscribe(ctx)
	sb, sbCfg := h.runSandbox("pod")
	id := h.createContainer(sb, sbCfg, "app")
	nextEvent(t, events, id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)

	_, err := h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: containerConfig("app")})
	wantCode(t, err, codes.AlreadyExists)
	_, err = h.client.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"ls"}})
	wantCode(t, err, codes.FailedPrecondition)

	h.startContainer(id)
	nextEvent(t, events, id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	_, err = h.client.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	wantCode(t, err, codes.FailedPrecondition)
	st := h.containerStatus(id)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 || st.Image.Image != testImage ||
		st.ImageRef == "" || st.Labels["c"] != "app" || filepath.Base(st.LogPath) != "app.log" {
		t.Fatalf("status = %+v", st)
	}
	if u := st.User.GetLinux(); u.GetUid() != 1000 || u.GetGid() != 1000 || len(u.GetSupplementalGroups()) != 2 || u.GetSupplementalGroups()[1] != 5 {
		t.Fatalf("status user = %v", st.User)
	}

	ex, err := h.client.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"echo", "hi"}})
	if err != nil || string(ex.Stdout) != "ran [echo hi]" || string(ex.Stderr) != "err" || ex.ExitCode != 3 {
		t.Fatalf("ExecSync = %v, %v", ex, err)
	}
	_, err = h.client.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sleep"}, Timeout: 1})
	wantCode(t, err, codes.DeadlineExceeded)

	stats, err := h.client.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
	if err != nil || len(stats.Stats) != 1 || stats.Stats[0].Cpu.UsageCoreNanoSeconds.Value != 10 {
		t.Fatalf("ListContainerStats = %v, %v", stats, err)
	}

	h.oci.exit(id, 2)
	nextEvent(t, events, id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	st = h.containerStatus(id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 2 || st.Reason != "Error" || st.FinishedAt < st.StartedAt {
		t.Fatalf("exited status = %+v", st)
	}
	if _, err := h.client.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("StopContainer of exited: %v", err)
	}
	for range 2 {
		if _, err := h.client.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
			t.Fatalf("RemoveContainer: %v", err)
		}
	}
	nextEvent(t, events, id, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	_, err = h.client.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	wantCode(t, err, codes.NotFound)
	if h.images.inUse() != 1 {
		t.Fatalf("container rootfs left: %d in use", h.images.inUse())
	}
}

func TestStopContainerKillsAndRemovingSandboxRemovesContainers(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	running := h.createContainer(sb, sbCfg, "a")
	h.startContainer(running)
	created := h.createContainer(sb, sbCfg, "b")

	if _, err := h.client.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: running, Timeout: 5}); err != nil {
		t.Fatal(err)
	}
	st := h.containerStatus(running)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 128+15 {
		t.Fatalf("after stop: %+v", st)
	}
	if _, err := h.client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	list, _ := h.client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if len(list.Containers) != 0 {
		t.Fatalf("containers left: %v", list.Containers)
	}
	if _, err := h.oci.State(ctx, created); err == nil {
		t.Fatal("created container left in the OCI runtime")
	}
	if h.images.inUse() != 0 || h.net.count() != 0 {
		t.Fatalf("rootfs=%d attached=%d left", h.images.inUse(), h.net.count())
	}
}

func nextEvent(t *testing.T, events runtimeapi.RuntimeService_GetContainerEventsClient, id string, typ runtimeapi.ContainerEventType) {
	t.Helper()
	for {
		ev, err := events.Recv()
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		if ev.ContainerId == id && ev.ContainerEventType == typ {
			return
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestLoggingInterceptorLevels(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	intercept := LoggingInterceptor(log)
	info := &grpc.UnaryServerInfo{FullMethod: "/runtime.v1.RuntimeService/X"}
	fail := func(code codes.Code) grpc.UnaryHandler {
		return func(context.Context, any) (any, error) { return nil, status.Error(code, "boom") }
	}
	_, _ = intercept(context.Background(), nil, info, fail(codes.NotFound))
	if buf.Len() != 0 {
		t.Fatalf("a client error was logged as a warning: %s", buf.String())
	}
	_, _ = intercept(context.Background(), nil, info, fail(codes.Internal))
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "/runtime.v1.RuntimeService/X") {
		t.Fatalf("an internal failure was not logged: %q", buf.String())
	}
}

// subscribe opens a GetContainerEvents stream and returns once the server
// has registered it, so no event published afterwards can be missed.
func (h *harness) subscribe(ctx context.Context) runtimeapi.RuntimeService_GetContainerEventsClient {
	h.t.Helper()
	before := h.srv.events.subscribers()
	events, err := h.client.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		h.t.Fatal(err)
	}
	// The server subscribes when the stream's handler starts.
	wait.Until(h.t, 30*time.Second, "the server to register the event stream", func() bool {
		return h.srv.events.subscribers() != before
	})
	return events
}
