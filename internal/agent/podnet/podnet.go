// Package podnet is what the agent does for pod networking across nodes:
// once its Node has a podCIDR (from the node IPAM controller) it hands it to
// the runtime through CRI UpdateRuntimeConfig, as the kubelet does, so the
// runtime's CNI network allocates pod IPs from it; and it keeps one route
// per other Node — that node's podCIDR via its InternalIP (host-gw) — so
// pods reach each other across nodes by pod IP. Nodes must share one L2
// segment for host-gw: the kernel refuses a gateway that is not on-link.
package podnet

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ResyncPeriod is how often routes are re-checked without a Node change, so
// a route removed by hand comes back.
const ResyncPeriod = time.Minute

const (
	syncKey        = "sync" // one key: every change leads to one full pass
	initialBackoff = 500 * time.Millisecond
	maxBackoff     = 30 * time.Second
)

// Config configures the manager.
type Config struct {
	Client   kubernetes.Interface
	NodeName string
	Runtime  runtimeapi.RuntimeServiceClient
	// Routes is the node's routing table; nil leaves routing alone (the
	// pod CIDR is still handed to the runtime).
	Routes Routes
	Logger *slog.Logger
}

// Manager keeps the runtime's pod CIDR and the node's host-gw routes in
// line with the Nodes.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	factory informers.SharedInformerFactory
	nodes   corelisters.NodeLister
	queue   workqueue.TypedRateLimitingInterface[string]

	applied string // the pod CIDR(s) the runtime last accepted; only the worker touches it
}

// New builds the manager; Run starts it.
func New(cfg Config) *Manager {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	factory := informers.NewSharedInformerFactory(cfg.Client, ResyncPeriod)
	return &Manager{
		cfg: cfg, log: log, factory: factory,
		nodes: factory.Core().V1().Nodes().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](initialBackoff, maxBackoff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "podnet"}),
	}
}

// Run keeps the pod network configured until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	enqueue := func(any) { m.queue.Add(syncKey) }
	if _, err := m.factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("podnet: node handler: %w", err)
	}
	m.factory.Start(ctx.Done())
	defer m.factory.Shutdown()
	for typ, ok := range m.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("podnet: %v informer did not sync: %w", typ, ctx.Err())
		}
	}
	go func() {
		<-ctx.Done()
		m.queue.ShutDown()
	}()
	m.queue.Add(syncKey) // also with no Node event: stale routes of a previous run go
	for {
		key, shutdown := m.queue.Get()
		if shutdown {
			return nil
		}
		if err := m.sync(ctx); err != nil {
			m.log.Warn("pod network not in line yet; retrying", "err", err)
			m.queue.AddRateLimited(key)
		} else {
			m.queue.Forget(key)
		}
		m.queue.Done(key)
	}
}

// sync makes one full pass: the runtime's pod CIDR, then the routes.
func (m *Manager) sync(ctx context.Context) error {
	nodes, err := m.nodes.List(everything)
	if err != nil {
		return err
	}
	self := findNode(nodes, m.cfg.NodeName)
	if err := m.applyPodCIDR(ctx, self); err != nil {
		return err
	}
	if m.cfg.Routes == nil {
		return nil
	}
	return m.syncRoutes(ctx, desiredRoutes(self, nodes))
}

// applyPodCIDR tells the runtime the node's podCIDRs (comma-separated, as
// the kubelet sends them) when they are new to it.
func (m *Manager) applyPodCIDR(ctx context.Context, self *nodeView) error {
	if self == nil || len(self.podCIDRs) == 0 {
		return nil
	}
	cidrs := strings.Join(self.podCIDRStrings(), ",")
	if cidrs == m.applied {
		return nil
	}
	_, err := m.cfg.Runtime.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{
		RuntimeConfig: &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: cidrs}},
	})
	if err != nil {
		return fmt.Errorf("CRI UpdateRuntimeConfig pod CIDR %s: %w", cidrs, err)
	}
	m.applied = cidrs
	m.log.Info("pod CIDR handed to the runtime", "podCIDR", cidrs)
	return nil
}

// syncRoutes removes berth's routes that are no longer wanted and adds the
// missing ones; one failing route does not hold up the others.
func (m *Manager) syncRoutes(ctx context.Context, want []Route) error {
	have, err := m.cfg.Routes.List(ctx)
	if err != nil {
		return err
	}
	wanted := map[Route]bool{}
	for _, r := range want {
		wanted[r] = true
	}
	present := map[Route]bool{}
	var errs []string
	for _, r := range have {
		present[r] = true
		if wanted[r] {
			continue
		}
		if err := m.cfg.Routes.Delete(ctx, r); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		m.log.Info("route removed", "dst", r.Dst, "via", r.Via)
	}
	for _, r := range want {
		if present[r] {
			continue
		}
		if err := m.cfg.Routes.Replace(ctx, r); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		m.log.Info("route added", "dst", r.Dst, "via", r.Via)
	}
	if len(errs) > 0 {
		return fmt.Errorf("routes: %s", strings.Join(errs, "; "))
	}
	return nil
}
