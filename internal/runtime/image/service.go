// Package image is berth runtime's image service: a content-addressed store on
// disk, pulls from OCI registries (auth, mirrors, plain-HTTP hosts), layers
// unpacked once into shared snapshot directories laid out for overlayfs,
// per-container overlay root filesystems, and the CRI v1 ImageService.
//
// On disk, under Config.Root:
//
//	metadata.json                  images by ID (config digest) with their tags,
//	                               digests and layers; replaced atomically
//	blobs/sha256/HEX               manifests, configs, compressed layers
//	snapshots/CHAINID/fs           one unpacked layer in overlayfs form, shared
//	containers/ID/{upper,work}     a container's writable layer
//	containers/ID/merged           the container's overlay mount (its rootfs)
//	containers/ID/mount.json       how to mount it again after a reboot, and
//	                               so which image the container uses
package image

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/dirperm"
)

// Config configures a Service.
type Config struct {
	// Root is the directory that holds the store, e.g. <root>/images.
	Root string
	// Mirrors maps a registry host (as written in image names, e.g.
	// "registry.k8s.io" or "docker.io") to the endpoints tried in order
	// instead of it, e.g. "http://127.0.0.1:5000". The repository path is
	// kept; the image keeps its upstream name in repo tags and digests. A
	// mirrored host itself is never contacted.
	Mirrors map[string][]string
	// Insecure lists registry hosts (host or host:port) reached over plain HTTP.
	Insecure []string
	// DockerConfig is the path of a docker config.json whose "auths" are used
	// when a pull request carries no AuthConfig. Empty means none.
	DockerConfig string
	// Transport is the HTTP transport for registry traffic; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Metrics receives the pull metrics; nil means they are not registered.
	Metrics prometheus.Registerer
	// Pinned lists image references (e.g. the pause image) reported as
	// pinned, which the kubelet's image garbage collection never removes.
	Pinned []string
	// ProgressInterval is how often a running pull logs its progress;
	// zero means every 2 seconds.
	ProgressInterval time.Duration
	// StallTimeout cancels a pull that has received no data for this long
	// (containerd's image_pull_progress_timeout); zero means 5 minutes,
	// negative never.
	StallTimeout time.Duration
	// MaxLayerSize bounds each layer's uncompressed size, both as a stream
	// and as the files it expands to, so a decompression bomb fails its
	// pull instead of filling the disk; zero means DefaultMaxLayerSize.
	MaxLayerSize int64
	Logger       *slog.Logger
}

// Service is the image store and the CRI ImageService. Safe for concurrent use.
type Service struct {
	runtimeapi.UnimplementedImageServiceServer

	cfg    Config
	log    *slog.Logger
	blobs  *blobStore
	meta   *metadataStore
	layers *snapshotter
	rootfs *rootfsManager
	pulls  singleflight.Group
	// inflight tracks the callers of each running pull (see Pull).
	inflightMu sync.Mutex
	inflight   map[string]*sharedPull
	pins       pinSet
	metrics    *pullMetrics
	mirrors    *mirrorResolver
	pinned     map[string]bool // normalised references of Config.Pinned

	// mu serialises changes to the metadata (pull commit, remove) and to
	// users, so that RemoveImage can never race a container taking the image.
	mu sync.Mutex
	// users maps container ID to the ID of the image its rootfs comes from
	// (see image_use.go). Guarded by mu.
	users map[string]string
}

var _ runtimeapi.ImageServiceServer = (*Service)(nil)

// DefaultMaxLayerSize is the largest uncompressed layer a pull accepts
// unless configured otherwise: far above any real image's layer (the
// largest common ones, CUDA and ML framework layers, are a few GiB), yet a
// bound on what one crafted, highly compressed layer can write to disk.
// containerd and CRI-O set no limit; disk space is the only one there.
const DefaultMaxLayerSize int64 = 64 << 30

// New opens (creating if needed) the store under cfg.Root.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Root == "" {
		return nil, errors.New("image: Config.Root is required")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("image: resolve root %q: %w", cfg.Root, err)
	}
	if strings.ContainsAny(root, ":,") {
		// They separate overlayfs mount options; layer paths live under root.
		return nil, fmt.Errorf("image: root %q must not contain ':' or ','", root)
	}
	cfg.Root = root
	switch {
	case cfg.MaxLayerSize == 0:
		cfg.MaxLayerSize = DefaultMaxLayerSize
	case cfg.MaxLayerSize < 0:
		return nil, fmt.Errorf("image: maximum layer size %d must be positive", cfg.MaxLayerSize)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mirrors, err := newMirrorResolver(cfg.Mirrors, cfg.Insecure)
	if err != nil {
		return nil, err
	}
	pinned := map[string]bool{}
	for _, ref := range cfg.Pinned {
		parsed, err := parseRef(ref)
		if err != nil {
			return nil, fmt.Errorf("image: pinned image: %w", err)
		}
		pinned[parsed.String()] = true
	}
	// Traversable only (see rootfsManager.prepare): blobs and layers stay
	// in 0700 directories below.
	if err := dirperm.MakeTraversable(root); err != nil {
		return nil, fmt.Errorf("image: root: %w", err)
	}
	meta, err := openMetadataStore(filepath.Join(root, "metadata.json"))
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	blobs, err := newBlobStore(filepath.Join(root, "blobs"))
	if err != nil {
		return nil, err
	}
	layers, err := newSnapshotter(filepath.Join(root, "snapshots"), cfg.MaxLayerSize)
	if err != nil {
		return nil, err
	}
	rootfs, err := newRootfsManager(filepath.Join(root, "containers"))
	if err != nil {
		return nil, err
	}
	users, err := loadUsers(rootfs)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	// Registered last, so a failure above leaves the registerer untouched.
	metrics, err := newPullMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg:      cfg,
		log:      log,
		blobs:    blobs,
		meta:     meta,
		layers:   layers,
		rootfs:   rootfs,
		metrics:  metrics,
		mirrors:  mirrors,
		inflight: map[string]*sharedPull{},
		pinned:   pinned,
		users:    users,
	}
	// Content left by a crash between recording a removal and deleting its
	// files, or by a pull that never completed, is garbage now.
	s.mu.Lock()
	err = s.collectGarbageLocked()
	s.mu.Unlock()
	if err != nil {
		log.WarnContext(ctx, "image store garbage collection incomplete", "err", err)
	}
	return s, nil
}

// isPinned reports whether one of the image's names is pinned.
func (s *Service) isPinned(rec *imageRecord) bool {
	for _, name := range append(slices.Clone(rec.RepoTags), rec.RepoDigests...) {
		if s.pinned[name] {
			return true
		}
	}
	return false
}
