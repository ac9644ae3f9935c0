// Package nodeipam gives every Node a pod CIDR (spec.podCIDR and
// spec.podCIDRs) carved from the cluster CIDR, as kube-controller-manager's
// node IPAM controller does with --allocate-node-cidrs. Each agent then hands
// its podCIDR to the runtime's CNI network and routes to the others'.
//
// One worker owns the allocation map: it is rebuilt from the Nodes that
// already carry a podCIDR before any new one is given out, so a restarted
// server never assigns a CIDR twice; a deleted Node's CIDR is freed.
package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"

	"github.com/berth/berth/internal/controller/keyloop"
	"github.com/berth/berth/internal/informeropts"
)

// Defaults: berth's pod network range, one /24 per node (upstream's default mask).
const (
	DefaultClusterCIDR  = "10.88.0.0/16"
	DefaultNodeMaskSize = 24
)

// Retry back-off when a write fails. A node refused for a full range is not
// retried on a timer: it waits until a release wakes it.
const (
	initialBackoff = 500 * time.Millisecond
	maxBackoff     = time.Minute
)

// Config configures the controller.
type Config struct {
	// Client writes Nodes' pod CIDRs and events; InformerClient lists and
	// watches Nodes (nil: Client); Nodes, when set, is where they are
	// listed and watched instead (the server's watch cache).
	Client         kubernetes.Interface
	InformerClient kubernetes.Interface
	Nodes          cache.ListerWatcher
	ClusterCIDR    string // e.g. 10.88.0.0/16
	NodeMaskSize   int    // bits of each node's podCIDR, e.g. 24
	Logger         *slog.Logger
}

// Controller assigns pod CIDRs to Nodes.
type Controller struct {
	client   kubernetes.Interface
	log      *slog.Logger
	factory  informers.SharedInformerFactory
	nodes    corelisters.NodeLister
	queue    workqueue.TypedRateLimitingInterface[string]
	set      *cidrSet
	recorder events.EventRecorder

	// owned is the CIDR this controller counts as held by each node name;
	// only the worker touches it (and the set).
	owned map[string]netip.Prefix
	// waiting holds nodes refused for a full range; a release wakes them
	// (nothing else can give them a CIDR).
	waiting map[string]struct{}
}

// New validates cfg and builds the controller; Run starts it.
func New(cfg Config) (*Controller, error) {
	set, err := parseRange(cfg.ClusterCIDR, cfg.NodeMaskSize)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	watch := cfg.InformerClient
	if watch == nil {
		watch = cfg.Client
	}
	factory := informers.NewSharedInformerFactoryWithOptions(watch, 0, informeropts.Factory()...)
	informeropts.ReadThrough(factory, &v1.Node{}, cfg.Nodes)
	return &Controller{
		client: cfg.Client, log: log, factory: factory, set: set,
		nodes: factory.Core().V1().Nodes().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](initialBackoff, maxBackoff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "nodeipam"}),
		owned: map[string]netip.Prefix{}, waiting: map[string]struct{}{},
	}, nil
}

// ValidateRange reports whether clusterCIDR can be split into nodes'
// /nodeMaskSize pod CIDRs, as one clear error for a command-line flag.
func ValidateRange(clusterCIDR string, nodeMaskSize int) error {
	_, err := parseRange(clusterCIDR, nodeMaskSize)
	return err
}

func parseRange(clusterCIDR string, nodeMaskSize int) (*cidrSet, error) {
	cluster, err := netip.ParsePrefix(clusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("cluster CIDR %q: %w", clusterCIDR, err)
	}
	if cluster != cluster.Masked() {
		return nil, fmt.Errorf("cluster CIDR %q has host bits set (did you mean %s?)", clusterCIDR, cluster.Masked())
	}
	return newCIDRSet(cluster, nodeMaskSize)
}

// Run allocates until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: c.client.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	c.recorder = broadcaster.NewRecorder(scheme.Scheme, "berth-nodeipam")

	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := c.factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("nodeipam: node handler: %w", err)
	}
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	for typ, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("nodeipam: %v informer did not sync: %w", typ, ctx.Err())
		}
	}
	if err := c.recover(); err != nil {
		return err
	}
	c.log.Info("node IPAM started", "clusterCIDR", c.set.cluster, "nodeMaskSize", c.set.maskSize, "inUse", c.set.inUse)
	keyloop.Run(ctx, c.queue, 1, c.sync, c.onError)
	return nil
}

// recover marks every CIDR existing Nodes hold before anything is handed out.
func (c *Controller) recover() error {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("nodeipam: list nodes: %w", err)
	}
	for _, n := range nodes {
		c.adopt(n)
	}
	return nil
}

func (c *Controller) onError(_ context.Context, name string, err error) bool {
	if errors.Is(err, ErrFull) {
		// Parked in c.waiting: only a release can help, and a release
		// wakes every waiter, so retrying on a timer would only repeat
		// the refusal.
		return false
	}
	c.log.Warn("pod CIDR not assigned yet", "node", name, "err", err)
	return true
}

// sync brings one node name's allocation in line with the Node.
func (c *Controller) sync(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		delete(c.waiting, name)
		c.forget(name)
		return nil
	}
	if err != nil {
		return err
	}
	if node.Spec.PodCIDR != "" {
		c.adopt(node)
		return nil
	}
	// A CIDR held already was given out before but is not yet seen on
	// the Node (the informer lags our own patch): reuse it rather than
	// take a second one.
	cidr, held := c.owned[name]
	if !held {
		cidr, err = c.set.allocate()
		if errors.Is(err, ErrFull) {
			c.park(node)
			return err
		}
		if err != nil {
			return err
		}
		c.owned[name] = cidr
		delete(c.waiting, name)
	}
	if err := c.patchPodCIDR(ctx, name, cidr); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(name)
			return nil
		}
		return err
	}
	c.log.Info("pod CIDR assigned", "node", name, "podCIDR", cidr)
	c.recorder.Eventf(node, nil, v1.EventTypeNormal, "CIDRAssigned", "AllocateCIDR", "Node %s: pod CIDR %s", name, cidr)
	return nil
}

// park records that node waits for a free CIDR. Only the change into
// waiting is reported (one event and one log line per node until it gets a
// CIDR or goes away): every update of a waiting Node syncs it again, and a
// thousand nodes over a full range used to write thousands of events.
func (c *Controller) park(node *v1.Node) {
	if _, already := c.waiting[node.Name]; already {
		return
	}
	c.waiting[node.Name] = struct{}{}
	c.log.Warn("no pod CIDR left; the node waits for one to be released", "node", node.Name, "clusterCIDR", c.set.cluster)
	c.recorder.Eventf(node, nil, v1.EventTypeWarning, "CIDRNotAvailable", "AllocateCIDR",
		"Node %s: no pod CIDR left in %s (%d of %d /%d subnets in use)", node.Name, c.set.cluster, c.set.inUse, len(c.set.used), c.set.maskSize)
}

// adopt records the CIDR a Node already carries. A CIDR outside the range
// (set by hand) or already held by another node is logged, never freed.
func (c *Controller) adopt(node *v1.Node) {
	cidr, err := netip.ParsePrefix(node.Spec.PodCIDR)
	if err != nil || node.Spec.PodCIDR == "" {
		return
	}
	if prev, ok := c.owned[node.Name]; ok {
		if prev == cidr {
			return
		}
		c.forget(node.Name)
	}
	delete(c.waiting, node.Name)
	fresh, err := c.set.occupy(cidr)
	switch {
	case err != nil:
		c.log.Warn("node has a pod CIDR outside the cluster range; left alone", "node", node.Name, "podCIDR", cidr, "err", err)
		return
	case !fresh:
		c.log.Warn("pod CIDR held by two nodes", "node", node.Name, "podCIDR", cidr, "others", c.holders(cidr, node.Name))
	}
	c.owned[node.Name] = cidr
}

// forget frees the CIDR of a node that is gone, unless another node still
// claims the same one.
func (c *Controller) forget(name string) {
	cidr, ok := c.owned[name]
	if !ok {
		return
	}
	delete(c.owned, name)
	if len(c.holders(cidr, name)) > 0 {
		return
	}
	if err := c.set.release(cidr); err != nil {
		return
	}
	c.log.Info("pod CIDR released", "node", name, "podCIDR", cidr)
	for waiter := range c.waiting {
		c.queue.Add(waiter)
	}
}

func (c *Controller) holders(cidr netip.Prefix, except string) []string {
	var out []string
	for n, p := range c.owned {
		if p == cidr && n != except {
			out = append(out, n)
		}
	}
	return out
}

// patchPodCIDR sets spec.podCIDR and spec.podCIDRs (whose first entry must
// equal podCIDR) in one merge patch.
func (c *Controller) patchPodCIDR(ctx context.Context, name string, cidr netip.Prefix) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{
		"podCIDR": cidr.String(), "podCIDRs": []string{cidr.String()},
	}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
