// Package nri connects berth's CRI runtime to Node Resource Interface
// plugins through containerd's NRI adaptation (github.com/containerd/nri
// pkg/adaptation): plugins connect on a unix socket, are told about every pod
// and container lifecycle event, and may adjust a container's OCI spec at
// creation or update running containers' resources.
package nri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	nrigen "github.com/containerd/nri/pkg/runtime-tools/generate"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DefaultSocketPath is where plugins connect unless configured otherwise.
const DefaultSocketPath = adaptation.DefaultSocketPath

// Config configures the NRI service.
type Config struct {
	SocketPath string // DefaultSocketPath when empty
	// PluginPath and PluginConfigPath hold pre-installed plugins started by
	// the runtime; "" uses NRI's defaults (/opt/nri/plugins, /etc/nri/conf.d).
	PluginPath, PluginConfigPath string
	Version                      string
	// RequestTimeout bounds each plugin call (DefaultRequestTimeout when 0).
	// Creations wait while a plugin synchronizes, so a plugin that takes
	// longer than this to synchronize is dropped rather than stalling them.
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// DefaultRequestTimeout is longer than NRI's own 2s default: a plugin that
// synchronizes with many containers, or does real work in Synchronize
// (critest's late-joining plugins take over 2s), must not be dropped while
// the pods it should know about are created.
const DefaultRequestTimeout = 10 * time.Second

// Host is what NRI needs from the runtime: the current pods and containers
// to synchronize a newly connected plugin, and a way to apply the container
// updates plugins ask for.
type Host interface {
	Snapshot(ctx context.Context) ([]*api.PodSandbox, []*api.Container)
	// UpdateContainers applies resource updates and returns those that failed.
	UpdateContainers(ctx context.Context, updates []*api.ContainerUpdate) ([]*api.ContainerUpdate, error)
}

// Service relays the runtime's lifecycle events to NRI plugins.
type Service struct {
	a   *adaptation.Adaptation
	log *slog.Logger

	mu   sync.Mutex
	host Host // set by Start
}

// New prepares the adaptation; plugins can connect only after Start.
func New(cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SocketPath == "" {
		cfg.SocketPath = DefaultSocketPath
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	// The adaptation keeps this setting package-wide: one runtime per
	// process uses it, so setting it here is not shared state in practice.
	adaptation.SetPluginRequestTimeout(cfg.RequestTimeout)
	s := &Service{log: cfg.Logger}
	opts := []adaptation.Option{adaptation.WithSocketPath(cfg.SocketPath)}
	if cfg.PluginPath != "" {
		opts = append(opts, adaptation.WithPluginPath(cfg.PluginPath))
	}
	if cfg.PluginConfigPath != "" {
		opts = append(opts, adaptation.WithPluginConfigPath(cfg.PluginConfigPath))
	}
	a, err := adaptation.New("berth", cfg.Version, s.synchronize, s.updateContainers, opts...)
	if err != nil {
		return nil, fmt.Errorf("nri: %w", err)
	}
	s.a = a
	return s, nil
}

// Start serves the plugin socket, synchronizing plugins with host's state.
func (s *Service) Start(host Host) error {
	s.mu.Lock()
	s.host = host
	s.mu.Unlock()
	if err := s.a.Start(); err != nil {
		return fmt.Errorf("nri: start: %w", err)
	}
	return nil
}

// Stop disconnects every plugin and closes the socket.
func (s *Service) Stop() { s.a.Stop() }

func (s *Service) getHost() (Host, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host == nil {
		return nil, errors.New("nri: not started")
	}
	return s.host, nil
}

// synchronize hands a connecting plugin the current pods and containers.
// The adaptation holds its sync lock meanwhile, and the runtime holds
// BlockSync across every lifecycle change, so nothing is created between
// this snapshot and the plugin's registration.
func (s *Service) synchronize(ctx context.Context, cb adaptation.SyncCB) error {
	host, err := s.getHost()
	if err != nil {
		return err
	}
	pods, ctrs := host.Snapshot(ctx)
	updates, err := cb(ctx, pods, ctrs)
	if err != nil {
		return err
	}
	if len(updates) > 0 {
		if _, err := host.UpdateContainers(ctx, updates); err != nil {
			s.log.Warn("nri: applying a plugin's synchronization updates", "err", err)
		}
	}
	return nil
}

// updateContainers applies updates a plugin asks for on its own.
func (s *Service) updateContainers(ctx context.Context, updates []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
	host, err := s.getHost()
	if err != nil {
		return updates, err
	}
	return host.UpdateContainers(ctx, updates)
}

// applyUpdates applies the side updates a hook returned for other containers.
func (s *Service) applyUpdates(ctx context.Context, updates []*api.ContainerUpdate) {
	if len(updates) == 0 {
		return
	}
	host, err := s.getHost()
	if err == nil {
		_, err = host.UpdateContainers(ctx, updates)
	}
	if err != nil {
		s.log.Warn("nri: applying plugin container updates", "err", err)
	}
}

// BlockSync keeps plugins from synchronizing until the returned func is
// called; the runtime holds it across a lifecycle change and its hook.
func (s *Service) BlockSync() func() { return s.a.BlockPluginSync().Unblock }

func (s *Service) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return s.a.RunPodSandbox(ctx, &adaptation.RunPodSandboxRequest{Pod: pod})
}

func (s *Service) StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return s.a.StopPodSandbox(ctx, &adaptation.StopPodSandboxRequest{Pod: pod})
}

func (s *Service) RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	return s.a.RemovePodSandbox(ctx, &adaptation.RemovePodSandboxRequest{Pod: pod})
}

// CreateContainer asks plugins for adjustments and applies them to spec.
func (s *Service) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, spec *specs.Spec) error {
	resp, err := s.a.CreateContainer(ctx, &adaptation.CreateContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		return err
	}
	if adj := resp.GetAdjust(); adj != nil {
		if err := nrigen.SpecGenerator(newSpecEditor(spec)).Adjust(adj); err != nil {
			return fmt.Errorf("nri: apply adjustment: %w", err)
		}
	}
	s.applyUpdates(ctx, resp.GetUpdate())
	return nil
}

func (s *Service) PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return s.a.PostCreateContainer(ctx, &adaptation.PostCreateContainerRequest{Pod: pod, Container: ctr})
}

func (s *Service) StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return s.a.StartContainer(ctx, &adaptation.StartContainerRequest{Pod: pod, Container: ctr})
}

func (s *Service) PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return s.a.PostStartContainer(ctx, &adaptation.PostStartContainerRequest{Pod: pod, Container: ctr})
}

// UpdateContainer lets plugins amend a resource update; it returns the
// resources to apply to ctr (res itself when no plugin changes them).
func (s *Service) UpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, res *specs.LinuxResources) (*specs.LinuxResources, error) {
	resp, err := s.a.UpdateContainer(ctx, &adaptation.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: api.FromOCILinuxResources(res, nil)})
	if err != nil {
		return nil, err
	}
	var others []*api.ContainerUpdate
	for _, u := range resp.GetUpdate() {
		if u.GetContainerId() == ctr.GetId() && u.GetLinux().GetResources() != nil {
			res = u.GetLinux().GetResources().ToOCI()
			continue
		}
		others = append(others, u)
	}
	s.applyUpdates(ctx, others)
	return res, nil
}

func (s *Service) PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return s.a.PostUpdateContainer(ctx, &adaptation.PostUpdateContainerRequest{Pod: pod, Container: ctr})
}

func (s *Service) StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	resp, err := s.a.StopContainer(ctx, &adaptation.StopContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		return err
	}
	s.applyUpdates(ctx, resp.GetUpdate())
	return nil
}

func (s *Service) RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return s.a.RemoveContainer(ctx, &adaptation.RemoveContainerRequest{Pod: pod, Container: ctr})
}
