// Package garbagecollector runs upstream's garbage collector
// (k8s.io/kubernetes/pkg/controller/garbagecollector) as berth server
// assembles it. It deletes objects whose owners are gone and carries out
// the propagation policy a deletion asked for, which the API server
// records as a finalizer (internal/apiserver/rest_delete_propagation.go).
//
// Upstream's: the dependency graph, the collection and orphaning workers,
// the periodic discovery of the served resources (Sync), the events.
// Berth's: the informer factory the graph builder's monitors run on
// (informers.go: reads from the watch cache through LocalMetadata, and
// informers that stop with their monitor), the discovery filter that skips
// resources the collector may not list (readable.go), and the metadata
// transform that keeps the cached objects small (transform.go).
package garbagecollector

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/pkg/controller/garbagecollector"

	"github.com/berth/berth/internal/informeropts"
)

// DefaultWorkers is how many objects are collected at once, as
// kube-controller-manager's --concurrent-gc-syncs default.
const DefaultWorkers = 20

// DefaultDiscoveryPeriod is how often the served resources are discovered
// again, and how long the workers wait for the first sync, as
// kube-controller-manager's collector.
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
	// Workers is how many objects are collected at once (DefaultWorkers when zero).
	Workers int
	Logger  *slog.Logger
}

// Controller is upstream's garbage collector with berth's informers.
type Controller struct {
	cfg       Config
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	informers *monitorInformers
	discovery *readableDiscovery
	gc        *upstream.GarbageCollector
	// started lets the graph builder start its monitors; Run closes it.
	started chan struct{}
}

// New builds the collector; Run starts it. The informers it creates read
// through LocalMetadata with ctx, so ctx should last as long as Run.
func New(ctx context.Context, cfg Config) (*Controller, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.DiscoveryPeriod <= 0 {
		cfg.DiscoveryPeriod = DefaultDiscoveryPeriod
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Controller{
		cfg:       cfg,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cfg.Client.Discovery())),
		informers: &monitorInformers{ctx: ctx, metadata: cfg.Metadata, local: cfg.LocalMetadata, log: cfg.Logger},
		discovery: newReadableDiscovery(cfg.Client.Discovery(), cfg.Metadata, cfg.Logger),
		started:   make(chan struct{}),
	}
	builder := upstream.NewDependencyGraphBuilder(ctx, cfg.Metadata, c.mapper, upstream.DefaultIgnoredResources(), c.informers, c.started)
	gc, err := upstream.NewComposedGarbageCollector(ctx, cfg.Client, cfg.Metadata, c.mapper, builder)
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	c.gc = gc
	return c, nil
}

// Run collects until ctx ends; call it once. It owns three loops, which
// all end with ctx: upstream's collector (graph builder, monitors and
// workers), its discovery of the served resources every DiscoveryPeriod,
// and the reset of the mapper from kinds to resources, as
// kube-controller-manager resets its own.
func (c *Controller) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("garbagecollector"))
	close(c.started)
	c.cfg.Logger.Info("garbage collector starting", "workers", c.cfg.Workers)
	var wg sync.WaitGroup
	wg.Go(func() { c.gc.Run(ctx, c.cfg.Workers, c.cfg.DiscoveryPeriod) })
	wg.Go(func() { c.gc.Sync(ctx, c.discovery, c.cfg.DiscoveryPeriod) })
	wg.Go(func() { informeropts.ResetMapper(c.mapper)(ctx) })
	wg.Wait()
	return nil
}

// GraphBuilder is the collector's dependency graph builder, whose monitors
// the storage version migrator reads.
func (c *Controller) GraphBuilder() *upstream.GraphBuilder {
	return c.gc.GetDependencyGraphBuilder()
}

// DebuggingHandler serves upstream's view of the dependency graph: GET
// /graph, in Graphviz's DOT, the whole graph or (?uid=...) the objects
// connected to the given ones.
func (c *Controller) DebuggingHandler() http.Handler {
	return c.gc.DebuggingHandler()
}

// Mapper maps kinds to resources, from discovery reset as Run goes.
func (c *Controller) Mapper() *restmapper.DeferredDiscoveryRESTMapper {
	return c.mapper
}
