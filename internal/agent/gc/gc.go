// Package gc is the node agent's garbage collector, as the kubelet's: it
// removes dead containers beyond a few per container of each pod, the dead
// containers and sandboxes of pods that no longer exist, and, when the image
// filesystem fills past a high threshold, unused images least recently used
// first until usage is back under a low threshold. Everything goes through
// CRI; only the filesystem's capacity comes from elsewhere (FsUsage).
package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/agent/podcgroup"
)

// PodSource says which pods exist: the agent's informer cache
// (pods.Manager). Until it knows (false), nothing is treated as deleted.
type PodSource interface {
	Pods() ([]*corev1.Pod, bool)
}

// Policy is what to keep and when to collect; see DefaultPolicy.
type Policy struct {
	// MaxDeadPerContainer is how many dead instances of each container of
	// an existing pod are kept (the newest); negative keeps them all; 0 is
	// refused (see Validate).
	MaxDeadPerContainer int
	// ContainerPeriod and ImagePeriod pace the two collections.
	ContainerPeriod, ImagePeriod time.Duration
	// CgroupPeriod paces the sweep of orphaned pod cgroups (the first runs
	// as soon as the node's pods are known); 0 means DefaultPolicy's.
	CgroupPeriod time.Duration
	// Image GC starts when the image filesystem is at least HighPercent
	// full and frees unused images until it would be below LowPercent.
	HighPercent, LowPercent int
	// MinImageAge protects images first seen less than this long ago (a
	// pull whose container is not created yet).
	MinImageAge time.Duration
	// PinnedImages are never removed (the sandbox image), beside those the
	// runtime itself reports pinned.
	PinnedImages []string
}

// DefaultPolicy is the kubelet's defaults.
var DefaultPolicy = Policy{
	MaxDeadPerContainer: 1,
	ContainerPeriod:     time.Minute,
	ImagePeriod:         5 * time.Minute,
	CgroupPeriod:        5 * time.Minute,
	HighPercent:         85,
	LowPercent:          80,
	MinImageAge:         2 * time.Minute,
}

// Validate returns one clear line for the first bad setting.
func (p Policy) Validate() error {
	switch {
	case p.MaxDeadPerContainer == 0:
		// The pod workers read from a container's newest dead instance
		// that an init container succeeded and what a container's last
		// state was: removing it would rerun init containers.
		return errors.New("maximum dead containers per container 0: keep at least 1, or -1 for all")
	case p.HighPercent < 0 || p.HighPercent > 100:
		return fmt.Errorf("image GC high threshold %d%%: want 0-100", p.HighPercent)
	case p.LowPercent < 0 || p.LowPercent > 100:
		return fmt.Errorf("image GC low threshold %d%%: want 0-100", p.LowPercent)
	case p.LowPercent > p.HighPercent:
		return fmt.Errorf("image GC low threshold %d%% is above the high threshold %d%%", p.LowPercent, p.HighPercent)
	case p.ContainerPeriod <= 0 || p.ImagePeriod <= 0 || p.CgroupPeriod < 0:
		return errors.New("GC periods must be positive")
	case p.MinImageAge < 0:
		return fmt.Errorf("minimum image age %s: must not be negative", p.MinImageAge)
	}
	return nil
}

// Config is what a Collector works with.
type Config struct {
	NodeName string
	Runtime  runtimeapi.RuntimeServiceClient
	Images   runtimeapi.ImageServiceClient
	Pods     PodSource
	// PodLogDir holds the pods' log directories (NS_NAME_UID); those of
	// deleted pods are removed with their sandboxes. Empty: left alone.
	PodLogDir string
	// Cgroups removes the cgroups of deleted pods with their last sandbox
	// and sweeps orphaned ones; nil leaves pod cgroups alone.
	Cgroups *podcgroup.Cleaner
	// Usage reads the image filesystem's size; nil uses CRI ImageFsInfo's
	// mount point and statfs (NewCRIFsUsage).
	Usage    FsUsage
	Recorder record.EventRecorder // events on the Node; nil records none
	Policy   Policy
	Clock    clock.WithTicker // nil: the real clock
	Metrics  *Metrics         // nil: no metrics
	Logger   *slog.Logger
}

// Collector runs the collections.
type Collector struct {
	cfg Config
	log *slog.Logger

	imagesMu sync.Mutex // one image pass at a time
	images   imageRecords
}

// New checks cfg's policy and returns a Collector; Run starts it.
func New(cfg Config) (*Collector, error) {
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Policy.CgroupPeriod == 0 {
		cfg.Policy.CgroupPeriod = DefaultPolicy.CgroupPeriod
	}
	if cfg.Usage == nil {
		cfg.Usage = NewCRIFsUsage(cfg.Images)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Collector{cfg: cfg, log: cfg.Logger, images: imageRecords{}}, nil
}

// Run collects containers every ContainerPeriod, images every ImagePeriod
// and orphaned pod cgroups every CgroupPeriod (and first at the first
// container collection that knows the node's pods) until ctx ends.
// Failures are logged (and reported as events) and retried on the next
// period; they never stop the agent.
func (c *Collector) Run(ctx context.Context) error {
	containers := c.cfg.Clock.NewTicker(c.cfg.Policy.ContainerPeriod)
	defer containers.Stop()
	images := c.cfg.Clock.NewTicker(c.cfg.Policy.ImagePeriod)
	defer images.Stop()
	cgroups := c.cfg.Clock.NewTicker(c.cfg.Policy.CgroupPeriod)
	defer cgroups.Stop()
	imageFailedBefore := false
	firstCgroupSweepDone := false
	sweepCgroups := func() {
		done, err := c.CollectPodCgroups(ctx)
		firstCgroupSweepDone = firstCgroupSweepDone || done
		if err != nil && ctx.Err() == nil {
			c.log.Warn("pod cgroup garbage collection failed", "err", err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-containers.C():
			if err := c.CollectContainers(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("container garbage collection failed", "err", err)
			}
			if !firstCgroupSweepDone {
				sweepCgroups()
			}
		case <-cgroups.C():
			sweepCgroups()
		case <-images.C():
			err := c.CollectImages(ctx)
			if err != nil && ctx.Err() == nil {
				c.log.Warn("image garbage collection failed", "err", err)
				// As the kubelet: one failure may be a runtime still
				// starting; two in a row are worth an event.
				if imageFailedBefore {
					c.nodeEvent(corev1.EventTypeWarning, ReasonImageGCFailed, err.Error())
				}
			}
			imageFailedBefore = err != nil
		}
	}
}

// Event reasons, as the kubelet's.
const (
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	ReasonImageGCFailed       = "ImageGCFailed"
)

// nodeEvent records an event on this node, referenced the way the kubelet
// does (the node's name as its UID), so `kubectl describe node` shows it.
func (c *Collector) nodeEvent(eventType, reason, message string) {
	if c.cfg.Recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Node", Name: c.cfg.NodeName, UID: types.UID(c.cfg.NodeName)}
	c.cfg.Recorder.Event(ref, eventType, reason, message)
}
