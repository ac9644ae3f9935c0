// Package runtime assembles `berth runtime`: the CRI v1 RuntimeService
// (internal/runtime/server) and ImageService (internal/runtime/image) on one
// unix socket, runc behind the monitor (internal/runtime/oci), CNI pod
// networking (internal/runtime/network), the CRI streaming server on
// loopback, and Prometheus metrics.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"

	"github.com/berth/berth/internal/dirperm"
	"github.com/berth/berth/internal/memtrim"
	"github.com/berth/berth/internal/runtime/image"
	"github.com/berth/berth/internal/runtime/imageimport"
	"github.com/berth/berth/internal/runtime/network"
	"github.com/berth/berth/internal/runtime/nri"
	"github.com/berth/berth/internal/runtime/oci"
	"github.com/berth/berth/internal/runtime/server"
	"github.com/berth/berth/internal/runtime/spec"
	"github.com/berth/berth/internal/version"
)

// Config is `berth runtime`'s command line.
type Config struct {
	Root           string // images and other content: <root>/images
	StateDir       string // sandbox/container state, runc root, monitors, netns, CNI cache
	Listen         string // unix:///PATH
	SocketGroup    string
	OCIRuntime     string // runc binary
	MonitorBinary  string // "" = berth-monitor beside the executable or on PATH
	CNIBinDirs     []string
	CNIConfDir     string
	Insecure       []string
	Mirrors        map[string][]string
	MetricsAddress string // "" = no metrics endpoint
	StreamAddress  string // loopback host:port of the streaming server; port 0 picks one
	PauseImage     string
	// RuntimeHandlers are the CRI runtime handlers besides the default one
	// (""), each run with OCIRuntime as the default is.
	RuntimeHandlers []string
	MaxLayerSize    int64 // image.Config.MaxLayerSize; 0 = image.DefaultMaxLayerSize

	// WaitForPodCIDR: no default CNI network until UpdateRuntimeConfig
	// brings the node's pod CIDR (network.Config.WaitForPodCIDR).
	WaitForPodCIDR bool

	// NRI plugins connect on NRISocket (nri.DefaultSocketPath,
	// /var/run/nri/nri.sock, when empty) unless DisableNRI is set.
	NRISocket  string
	DisableNRI bool
	Logger     *slog.Logger
}

// shutdownGrace bounds how long in-flight RPCs may finish on SIGTERM.
const shutdownGrace = 10 * time.Second

// Run serves until ctx is cancelled, then stops cleanly. Containers keep
// running under their monitors; the next Run recovers them.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.complete(); err != nil {
		return err
	}
	log := cfg.Logger
	sockPath, err := socketPath(cfg.Listen)
	if err != nil {
		return err
	}
	lis, err := listenUnix(sockPath, cfg.SocketGroup)
	if err != nil {
		return err
	}
	defer lis.Close()

	svc, err := assemble(ctx, cfg)
	if err != nil {
		return err
	}
	defer svc.close()

	g := grpc.NewServer(server.GRPCServerOptions(log.With("component", "cri"), svc.metrics)...)
	runtimeapi.RegisterRuntimeServiceServer(g, svc.runtime)
	runtimeapi.RegisterImageServiceServer(g, svc.images)
	imageimport.Register(g, svc.images)

	errc := make(chan error, 3)
	go func() { errc <- g.Serve(lis) }()
	go func() { errc <- serveHTTP(svc.streamListener, svc.stream) }()
	if svc.metricsListener != nil {
		go func() {
			errc <- serveHTTP(svc.metricsListener, promhttp.HandlerFor(svc.registry, promhttp.HandlerOpts{}))
		}()
	}
	log.Info("berth runtime serving", "socket", sockPath, "streaming", svc.streamListener.Addr().String(), "metrics", cfg.MetricsAddress)
	memtrim.DropStartupPages(log)

	select {
	case <-ctx.Done():
		log.Info("shutting down; containers keep running")
	case err = <-errc:
		log.Error("a listener failed", "err", err)
	}
	stopGRPC(g)
	return err
}

// stopGRPC lets in-flight RPCs finish, within a bound.
func stopGRPC(g *grpc.Server) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		g.Stop()
	}
}

func serveHTTP(lis net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	err := srv.Serve(lis)
	if errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (cfg *Config) complete() error {
	if cfg.Root == "" || cfg.StateDir == "" || cfg.Listen == "" {
		return errors.New("--root, --state-dir and --listen are required")
	}
	for _, d := range []*string{&cfg.Root, &cfg.StateDir} {
		abs, err := filepath.Abs(*d)
		if err != nil {
			return err
		}
		*d = abs
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.CNIBinDirs) == 0 {
		cfg.CNIBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}
	}
	if cfg.CNIConfDir == "" {
		cfg.CNIConfDir = filepath.Join(cfg.StateDir, "cni", "net.d")
	}
	if cfg.StreamAddress == "" {
		cfg.StreamAddress = "127.0.0.1:0"
	}
	if host, _, err := net.SplitHostPort(cfg.StreamAddress); err != nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("streaming address %q must be a loopback host:port", cfg.StreamAddress)
	}
	return nil
}

// service is the assembled runtime and what must be closed with it.
type service struct {
	runtime         *server.Server
	images          *image.Service
	metrics         *server.Metrics
	registry        *prometheus.Registry
	stream          streaming.Server
	streamListener  net.Listener
	metricsListener net.Listener
	nri             *nri.Service
	oci             *oci.Runc
}

func (s *service) close() {
	if s.nri != nil {
		s.nri.Stop()
	}
	if s.runtime != nil {
		s.runtime.Close()
	}
	if s.streamListener != nil {
		s.streamListener.Close()
	}
	if s.metricsListener != nil {
		s.metricsListener.Close()
	}
	if s.oci != nil {
		s.oci.Close()
	}
}

// assemble builds every part; on error whatever was built is closed.
func assemble(ctx context.Context, cfg Config) (_ *service, retErr error) {
	log := cfg.Logger
	svc := &service{registry: prometheus.NewRegistry(), metrics: server.NewMetrics()}
	defer func() {
		if retErr != nil {
			svc.close()
		}
	}()
	svc.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := svc.metrics.Register(svc.registry); err != nil {
		return nil, err
	}
	// A user-namespaced container's root, a host user of its own, must
	// pass through these to its root filesystem and its pod's files.
	if err := dirperm.MakeTraversable(cfg.Root, cfg.StateDir); err != nil {
		return nil, err
	}
	var err error
	svc.images, err = image.New(ctx, image.Config{
		Root: filepath.Join(cfg.Root, "images"), Mirrors: cfg.Mirrors, Insecure: cfg.Insecure, MaxLayerSize: cfg.MaxLayerSize,
		Metrics: svc.registry, Logger: log.With("component", "image"),
	})
	if err != nil {
		return nil, err
	}
	ociRuntime, err := oci.NewRunc(oci.RuncConfig{
		Binary: cfg.OCIRuntime, Root: filepath.Join(cfg.StateDir, "runc"), StateDir: filepath.Join(cfg.StateDir, "monitors"),
		MonitorBinary: cfg.MonitorBinary, Logger: log.With("component", "oci"),
	})
	if err != nil {
		return nil, err
	}
	svc.oci = ociRuntime
	netMgr, err := network.New(network.Config{
		BinDirs: cfg.CNIBinDirs, ConfDir: cfg.CNIConfDir, StateDir: filepath.Join(cfg.StateDir, "cni"),
		WaitForPodCIDR: cfg.WaitForPodCIDR, Logger: log.With("component", "network"),
	})
	if err != nil {
		return nil, err
	}
	if svc.streamListener, err = net.Listen("tcp", cfg.StreamAddress); err != nil {
		return nil, fmt.Errorf("streaming server: %w", err)
	}
	if cfg.MetricsAddress != "" {
		if svc.metricsListener, err = net.Listen("tcp", cfg.MetricsAddress); err != nil {
			return nil, fmt.Errorf("--metrics-address: %w", err)
		}
	}
	streamCfg := streaming.DefaultConfig
	streamCfg.Addr = svc.streamListener.Addr().String()
	streamCfg.BaseURL = &url.URL{Scheme: "http", Host: streamCfg.Addr}
	// The streaming server needs the runtime and the runtime the streaming
	// server; the indirection breaks the cycle.
	var backend lateStreamRuntime
	if svc.stream, err = streaming.NewServer(streamCfg, &backend); err != nil {
		return nil, fmt.Errorf("streaming server: %w", err)
	}
	host, err := spec.DetectHost(ctx, ociBinary(cfg.OCIRuntime))
	if err != nil {
		return nil, err
	}
	var hooks server.NRI
	if !cfg.DisableNRI {
		if svc.nri, err = nri.New(nri.Config{SocketPath: cfg.NRISocket, Version: version.Version, Logger: log.With("component", "nri")}); err != nil {
			return nil, err
		}
		hooks = svc.nri
	}
	svc.runtime, err = server.New(ctx, server.Config{
		StateDir: cfg.StateDir, PauseImage: cfg.PauseImage, RuntimeHandlers: cfg.RuntimeHandlers, OCI: ociRuntime,
		Images: imageAdapter{svc.images}, Specs: specAdapter{host: host}, Network: netMgr,
		Features: server.Features{
			RecursiveReadOnlyMounts: host.RecursiveReadOnly, SupplementalGroupsPolicy: true,
			UserNamespaces: host.UserNamespaces && usernsReachable(log, cfg.Root, cfg.StateDir),
		},
		Streaming: svc.stream, Metrics: svc.metrics, NRI: hooks, Logger: log.With("component", "cri"),
	})
	if err != nil {
		return nil, err
	}
	backend.Runtime = svc.runtime.StreamRuntime()
	// Plugins connect only once the runtime can answer their synchronization.
	// An unusable NRI socket leaves the runtime working without plugins,
	// as a node without NRI would be, rather than not at all.
	if svc.nri != nil {
		if err := svc.nri.Start(svc.runtime.NRIHost()); err != nil {
			log.Error("NRI disabled: plugins cannot connect", "socket", cfg.NRISocket, "err", err)
		}
	}
	return svc, nil
}

// lateStreamRuntime forwards to a streaming.Runtime set after construction.
type lateStreamRuntime struct{ streaming.Runtime }

func ociBinary(name string) string {
	if name == "" {
		return "runc"
	}
	return name
}

// usernsReachable reports whether every directory above the runtime's own
// lets others pass, as user-namespaced pods need; if one does not, the
// runtime offers no user namespaces and says which directory is closed.
func usernsReachable(log *slog.Logger, dirs ...string) bool {
	for _, d := range dirs {
		if closed := dirperm.Blocking(d); closed != "" {
			log.Warn("pods with a user namespace of their own are not offered: others may not pass through a directory above the runtime's",
				"dir", closed, "fix", "chmod o+x "+closed)
			return false
		}
	}
	return true
}
