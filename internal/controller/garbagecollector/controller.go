// Package garbagecollector deletes objects whose owners are gone and carries
// out the propagation policy a deletion asked for, as kube-controller-
// manager's garbage collector does: it watches the metadata of every served
// resource (discovered again periodically, as CustomResourceDefinitions
// come and go), keeps an owner→dependents graph by UID, deletes dependents
// whose every owner is gone (background), deletes the dependents of an owner
// in foreground deletion before releasing it, and strips the references to
// an orphaning owner from its dependents before releasing it. The API server
// records the policy as a finalizer (internal/apiserver/rest_delete_propagation.go).
package garbagecollector

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"

	"github.com/berth/berth/internal/controller/keyloop"
)

// DefaultWorkers is how many objects are synced at once.
const DefaultWorkers = 4

// DefaultDiscoveryPeriod is how often the served resources are discovered
// again, as kube-controller-manager's collector.
const DefaultDiscoveryPeriod = 30 * time.Second

// Config configures the collector.
type Config struct {
	// Client records events and discovers the served resources.
	Client kubernetes.Interface
	// Metadata reads, watches, patches and deletes any resource by its metadata.
	Metadata metadata.Interface
	// LocalMetadata, when set, is where a resource's metadata is listed
	// and watched instead of through Metadata (berth server's own watch
	// cache); resources it returns an error for go through Metadata.
	LocalMetadata func(ctx context.Context, gvr schema.GroupVersionResource) (cache.ListerWatcher, error)
	// DiscoveryPeriod is how often the served resources are discovered
	// again (DefaultDiscoveryPeriod when zero).
	DiscoveryPeriod time.Duration
	Workers         int
	Logger          *slog.Logger
}

// Controller is the garbage collector.
type Controller struct {
	cfg      Config
	log      *slog.Logger
	graph    *graph
	queue    workqueue.TypedRateLimitingInterface[types.UID]
	resolver *resolver
	writer   writer
	monitors monitorSet
	recorder events.EventRecorder
	// discoveryBackoff paces start-up retries of discovery.
	discoveryBackoff wait.Backoff
}

// New builds the collector; Run starts it.
func New(cfg Config) *Controller {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.DiscoveryPeriod <= 0 {
		cfg.DiscoveryPeriod = DefaultDiscoveryPeriod
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := newGraph()
	return &Controller{
		cfg: cfg, log: cfg.Logger, graph: g,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.UID](),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "garbagecollector"}),
		resolver: &resolver{graph: g, client: cfg.Metadata},
		writer:   writer{client: cfg.Metadata},

		discoveryBackoff: defaultDiscoveryBackoff(),
	}
}

// Run collects until ctx ends. It watches the resources served at start,
// and a goroutine it owns re-discovers them every DiscoveryPeriod, since
// CustomResourceDefinitions add and remove resources while the server runs.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	resources, mapper, err := c.discover(ctx)
	if err != nil {
		return fmt.Errorf("garbage collector: %w", err)
	}
	c.resolver.setMapper(mapper)

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: c.cfg.Client.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	c.recorder = broadcaster.NewRecorder(scheme.Scheme, "garbage-collector-controller")

	defer c.stopMonitors() // on an early return too
	resources = c.readable(ctx, resources)
	if err := c.startMonitors(ctx, resources); err != nil {
		return fmt.Errorf("garbage collector: %w", err)
	}
	if err := c.waitForMonitors(ctx); err != nil {
		return fmt.Errorf("garbage collector: %w", err)
	}
	c.log.Info("garbage collector started", "resources", len(resources))

	var background sync.WaitGroup
	defer background.Wait()
	rediscoverCtx, stopRediscovery := context.WithCancel(ctx)
	defer stopRediscovery() // before background.Wait, and before the monitors stop
	background.Go(func() { c.rediscover(rediscoverCtx) })

	keyloop.Run(ctx, c.queue, c.cfg.Workers, c.sync, c.onError)
	return nil
}

// onError logs each failure and records the first as an event on the object.
func (c *Controller) onError(ctx context.Context, uid types.UID, err error) bool {
	if ctx.Err() != nil {
		return false // shutting down
	}
	c.log.Warn("garbage collection failed; retrying", "uid", uid, "attempts", c.queue.NumRequeues(uid)+1, "err", err)
	if n, ok := c.graph.get(uid); ok && c.queue.NumRequeues(uid) == 0 {
		c.event(n, corev1.EventTypeWarning, "GarbageCollectionFailed", err.Error())
	}
	return true
}

// event records an event about n, naming it by reference so any resource works.
func (c *Controller) event(n node, eventType, reason, note string) {
	if c.recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{
		APIVersion: n.resource.GroupVersion().String(), Kind: n.kind.Kind,
		Namespace: n.namespace, Name: n.name, UID: n.uid,
	}
	c.recorder.Eventf(ref, nil, eventType, reason, "GarbageCollect", "%s", note)
}
