// Package server is berth's CRI v1 RuntimeService: pod sandboxes with their
// network, containers run through the OCI runtime and its monitor, state
// persisted so the service can restart under running containers. One RPC per
// file, named <object>_<verb>.go.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/keyedlock"
	"github.com/berth/berth/internal/runtime/cgroupstats"
	"github.com/berth/berth/internal/runtime/oci"
)

// DefaultPauseImage is the image whose command is the pause process of
// sandboxes whose containers share a PID namespace (see needsPause).
const DefaultPauseImage = "registry.k8s.io/pause:3.9"

// Config assembles a Server from its parts.
type Config struct {
	StateDir   string // sandboxes/, containers/, netns/, utsns/, ipcns/ live here
	PauseImage string
	// RuntimeHandlers are the handlers a sandbox may name besides the
	// default one (""); all run with OCI.
	RuntimeHandlers []string
	OCI             oci.Runtime
	Images          Images
	Specs           Specs
	Network         Network
	Streaming       Streamer // nil: Exec/Attach/PortForward answer Unavailable
	Features        Features
	Metrics         *Metrics
	Cgroups         CgroupReader // nil: the host's cgroups
	NRI             NRI          // nil: no NRI plugins
	Logger          *slog.Logger
}

// Features are the optional CRI features the assembled runtime supports,
// reported by Status so clients (kubelet, critest) know what to expect.
type Features struct {
	RecursiveReadOnlyMounts  bool // the OCI runtime supports "rro" mounts
	UserNamespaces           bool // pods may have user namespaces (spec.Host.UserNamespaces)
	SupplementalGroupsPolicy bool // the spec generator honours Merge/Strict
}

// Server implements runtimeapi.RuntimeServiceServer.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer

	cfg        Config
	log        *slog.Logger
	sandboxes  *table[sandbox]
	containers *table[container]
	events     *eventHub
	// locks serialise lifecycle calls on one object (a Stop racing a
	// Remove of the same container) without serialising different ones.
	locks keyedlock.Locks

	// exits owns one goroutine per started container that waits for its exit.
	exitCtx   context.Context
	stopExits context.CancelFunc
	exitGroup sync.WaitGroup
}

var _ runtimeapi.RuntimeServiceServer = (*Server)(nil)

// New builds the server and recovers every sandbox and container persisted
// in cfg.StateDir; a corrupt object is logged and marked, never fatal.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.StateDir == "" || cfg.OCI == nil || cfg.Images == nil || cfg.Specs == nil || cfg.Network == nil {
		return nil, errors.New("server: StateDir, OCI, Images, Specs and Network are required")
	}
	if cfg.PauseImage == "" {
		cfg.PauseImage = DefaultPauseImage
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.NRI == nil {
		cfg.NRI = noNRI{}
	}
	if cfg.Cgroups == nil {
		cfg.Cgroups = cgroupstats.NewHost()
	}
	sandboxes, err := newTable[sandbox]("sandbox", filepath.Join(cfg.StateDir, "sandboxes"))
	if err != nil {
		return nil, err
	}
	containers, err := newTable[container]("container", filepath.Join(cfg.StateDir, "containers"))
	if err != nil {
		return nil, err
	}
	exitCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{
		cfg: cfg, log: cfg.Logger, sandboxes: sandboxes, containers: containers,
		events: newEventHub(), exitCtx: exitCtx, stopExits: stop,
	}
	if err := s.prepareIDMapRoot(); err != nil {
		stop()
		return nil, fmt.Errorf("server: idmapped volumes dir: %w", err)
	}
	if err := s.recover(ctx); err != nil {
		stop()
		return nil, fmt.Errorf("server: recover state: %w", err)
	}
	return s, nil
}

// Close stops the server's background work. Containers keep running: they
// belong to their monitors, and the next server recovers them.
func (s *Server) Close() {
	s.stopExits()
	s.exitGroup.Wait()
	s.events.close()
}

func (s *Server) sandboxDir(id string) string {
	return filepath.Join(s.cfg.StateDir, "sandboxes", id)
}

func (s *Server) bundleDir(id string) string {
	return filepath.Join(s.cfg.StateDir, "bundles", id)
}
