package nri

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// fakeHost is the runtime side: a fixed set of pods and containers, and a
// record of the updates plugins asked for.
type fakeHost struct {
	mu      sync.Mutex
	pods    []*api.PodSandbox
	ctrs    []*api.Container
	updates []*api.ContainerUpdate
}

func (h *fakeHost) Snapshot(context.Context) ([]*api.PodSandbox, []*api.Container) {
	return h.pods, h.ctrs
}

func (h *fakeHost) UpdateContainers(_ context.Context, u []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.updates = append(h.updates, u...)
	return nil, nil
}

// plugin is a real NRI plugin (the nri stub library) that records what it
// hears, adjusts every container it is asked to create, and vetoes pods
// named "vetoed".
type plugin struct {
	mu     sync.Mutex
	synced []string
	events []string
}

func (p *plugin) record(e string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, e)
}

func (p *plugin) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range ctrs {
		p.synced = append(p.synced, c.GetId())
	}
	return nil, nil
}

func (p *plugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.record("RunPodSandbox " + pod.GetName())
	if pod.GetName() == "vetoed" {
		return errors.New("vetoed by the test plugin")
	}
	return nil
}

func (p *plugin) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.record("CreateContainer " + c.GetName())
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("FROM_NRI", "yes")
	adj.AddAnnotation("nri.test/adjusted", "true")
	adj.AddMount(&api.Mount{Destination: "/nri", Source: "/tmp", Type: "bind", Options: []string{"bind", "ro"}})
	adj.SetLinuxMemoryLimit(64 << 20)
	update := &api.ContainerUpdate{ContainerId: "other"}
	update.SetLinuxCPUShares(512)
	return adj, []*api.ContainerUpdate{update}, nil
}

func (p *plugin) StopContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) ([]*api.ContainerUpdate, error) {
	p.record("StopContainer " + c.GetName())
	return nil, nil
}

func startService(t *testing.T, host Host) (*Service, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "nri.sock")
	svc, err := New(Config{SocketPath: sock, PluginPath: t.TempDir(), PluginConfigPath: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return svc, sock
}

func connect(t *testing.T, sock string, p *plugin) stub.Stub {
	t.Helper()
	s, err := stub.New(p, stub.WithPluginName("test"), stub.WithPluginIdx("00"), stub.WithSocketPath(sock))
	if err != nil {
		t.Fatal(err)
	}
	// Start returns once the plugin is registered and synchronized.
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func TestPluginIsSynchronizedAdjustsAndVetoes(t *testing.T) {
	host := &fakeHost{
		pods: []*api.PodSandbox{{Id: "pod0", Name: "existing"}},
		ctrs: []*api.Container{{Id: "ctr0", PodSandboxId: "pod0", Name: "existing", State: api.ContainerState_CONTAINER_RUNNING}},
	}
	svc, sock := startService(t, host)
	p := &plugin{}
	connect(t, sock, p)
	// The stub's Start returns on registration; synchronization follows.
	var synced []string
	wait.Until(t, 30*time.Second, "the plugin to be synchronized", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		synced = slices.Clone(p.synced)
		return len(synced) > 0
	})
	if !slices.Equal(synced, []string{"ctr0"}) {
		t.Fatalf("plugin synchronized with %v, want the existing ctr0", synced)
	}
	// Registration completes under the sync lock: once it can be taken,
	// the plugin receives events.
	svc.BlockSync()()

	ctx := context.Background()
	pod := &api.PodSandbox{Id: "pod1", Name: "web"}
	if err := svc.RunPodSandbox(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := svc.RunPodSandbox(ctx, &api.PodSandbox{Id: "pod2", Name: "vetoed"}); err == nil {
		t.Error("the plugin's veto of RunPodSandbox was not returned")
	}

	spec := &specs.Spec{Process: &specs.Process{Args: []string{"sh"}, Env: []string{"PATH=/bin"}}, Linux: &specs.Linux{}}
	if err := svc.CreateContainer(ctx, pod, &api.Container{Id: "ctr1", PodSandboxId: "pod1", Name: "app"}, spec); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(spec.Process.Env, "FROM_NRI=yes") || !slices.Contains(spec.Process.Env, "PATH=/bin") {
		t.Errorf("env not adjusted: %v", spec.Process.Env)
	}
	if spec.Annotations["nri.test/adjusted"] != "true" {
		t.Errorf("annotations not adjusted: %v", spec.Annotations)
	}
	if len(spec.Mounts) != 1 || spec.Mounts[0].Destination != "/nri" {
		t.Errorf("mounts not adjusted: %+v", spec.Mounts)
	}
	if r := spec.Linux.Resources; r == nil || r.Memory == nil || r.Memory.Limit == nil || *r.Memory.Limit != 64<<20 {
		t.Errorf("memory limit not adjusted: %+v", spec.Linux.Resources)
	}
	host.mu.Lock()
	if len(host.updates) != 1 || host.updates[0].GetContainerId() != "other" {
		t.Errorf("the plugin's update of another container was not applied: %v", host.updates)
	}
	host.mu.Unlock()

	if err := svc.StopContainer(ctx, pod, &api.Container{Id: "ctr1", Name: "app"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"RunPodSandbox web", "RunPodSandbox vetoed", "CreateContainer app", "StopContainer app"}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Equal(p.events, want) {
		t.Errorf("plugin heard %v, want %v", p.events, want)
	}
}
