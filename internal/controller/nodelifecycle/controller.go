// Package nodelifecycle watches node heartbeats (Leases in kube-node-lease)
// and acts when a node goes silent, as kube-controller-manager's node
// lifecycle controller does: conditions become Unknown, the node is tainted
// NoExecute, its pods are evicted once their tolerationSeconds run out, and
// pods bound to nodes that no longer exist are garbage collected.
package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/informeropts"
)

// Defaults as upstream: a node is unhealthy 40 s after its last heartbeat,
// checked every 5 s.
const (
	DefaultGracePeriod   = 40 * time.Second
	DefaultMonitorPeriod = 5 * time.Second
	leaseNamespace       = v1.NamespaceNodeLease
)

// Config configures the controller.
type Config struct {
	Client        kubernetes.Interface
	Clock         clock.WithTicker
	GracePeriod   time.Duration
	MonitorPeriod time.Duration
	Logger        *slog.Logger
	// Pods and Nodes, when set, are where the pod and node informers list
	// and watch instead of Client (berth server's watch cache).
	Pods, Nodes cache.ListerWatcher
}

// Controller is the node lifecycle controller.
type Controller struct {
	cfg     Config
	log     *slog.Logger
	factory informers.SharedInformerFactory
	nodes   corelisters.NodeLister
	leases  coordlisters.LeaseLister
	pods    cache.Store // of *lifecyclePod

	// heartbeats records, per node, the last renewTime seen and when this
	// controller saw it change, measured on its own clock so that clock
	// skew between nodes and server does not matter.
	mu         sync.Mutex
	heartbeats map[string]heartbeat
}

type heartbeat struct {
	renewTime  time.Time
	observedAt time.Time
}

// New builds the controller; Run starts it.
func New(cfg Config) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.GracePeriod <= 0 {
		cfg.GracePeriod = DefaultGracePeriod
	}
	if cfg.MonitorPeriod <= 0 {
		cfg.MonitorPeriod = DefaultMonitorPeriod
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informeropts.Factory()...)
	informeropts.ReadThrough(factory, &v1.Pod{}, cfg.Pods)
	informeropts.ReadThrough(factory, &v1.Node{}, cfg.Nodes)
	// Not started yet, so this cannot fail.
	_ = factory.Core().V1().Pods().Informer().SetTransform(keepLifecycleParts)
	return &Controller{
		cfg: cfg, log: cfg.Logger, factory: factory,
		nodes:      factory.Core().V1().Nodes().Lister(),
		leases:     factory.Coordination().V1().Leases().Lister(),
		pods:       factory.Core().V1().Pods().Informer().GetStore(),
		heartbeats: map[string]heartbeat{},
	}
}

// Run monitors nodes every MonitorPeriod until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	for typ, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("node lifecycle: %v informer did not sync: %w", typ, ctx.Err())
		}
	}
	ticker := c.cfg.Clock.NewTicker(c.cfg.MonitorPeriod)
	defer ticker.Stop()
	for {
		if err := c.Sync(ctx); err != nil {
			c.log.Warn("node lifecycle pass failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// Sync runs one monitoring pass: node health, taints, evictions, pod GC.
func (c *Controller) Sync(ctx context.Context) error {
	nodes, err := c.nodes.List(everything)
	if err != nil {
		return err
	}
	now := c.cfg.Clock.Now()
	byNode := map[string][]*lifecyclePod{}
	for _, p := range c.listPods() {
		if p.NodeName != "" {
			byNode[p.NodeName] = append(byNode[p.NodeName], p)
		}
	}
	for _, node := range nodes {
		current, err := c.monitorHealth(ctx, node, now)
		if err != nil {
			c.log.Warn("updating node health", "node", node.Name, "err", err)
			continue
		}
		c.evict(ctx, current, byNode[node.Name], now)
		delete(byNode, node.Name)
	}
	// Whatever is left is bound to a node that does not exist.
	for name, orphans := range byNode {
		c.collectOrphans(ctx, name, orphans)
	}
	return nil
}

func (c *Controller) lease(node string) *coordinationv1.Lease {
	l, err := c.leases.Leases(leaseNamespace).Get(node)
	if err != nil {
		return nil
	}
	return l
}

// listPods is every pod the informer holds, as the transform left it.
func (c *Controller) listPods() []*lifecyclePod {
	items := c.pods.List()
	out := make([]*lifecyclePod, 0, len(items))
	for _, item := range items {
		if p, ok := item.(*lifecyclePod); ok {
			out = append(out, p)
		}
	}
	return out
}
