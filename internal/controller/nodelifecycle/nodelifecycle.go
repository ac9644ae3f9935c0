// Package nodelifecycle runs the controllers kube-controller-manager keeps
// nodes and their pods with, upstream's own: the node lifecycle controller
// (silent nodes' conditions become Unknown, nodes are tainted NoSchedule
// by their conditions and NoExecute when not ready or unreachable, their
// pods marked not ready), the taint eviction controller (pods that do not
// tolerate a NoExecute taint are deleted once their tolerationSeconds run
// out) and the pod garbage collector (pods of nodes that are gone,
// terminated pods past the threshold). Only the wiring is berth's: one
// informer factory for the three, its pods and nodes read through to the
// API server's watch cache.
package nodelifecycle

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/pkg/controller/nodelifecycle"
	"k8s.io/kubernetes/pkg/controller/podgc"
	"k8s.io/kubernetes/pkg/controller/tainteviction"

	"github.com/berth/berth/internal/informeropts"
)

// kube-controller-manager v1.37's defaults (its --node-eviction-rate,
// --secondary-node-eviction-rate, --large-cluster-size-threshold,
// --unhealthy-zone-threshold and --terminated-pod-gc-threshold).
const (
	evictionRate           = 0.1
	secondaryEvictionRate  = 0.01
	largeClusterThreshold  = 50
	unhealthyZoneThreshold = 0.55
	terminatedPodThreshold = 12500
	// taintEvictionName is the name kube-controller-manager gives the
	// taint eviction controller; it is its events' source.
	taintEvictionName = "taint-eviction-controller"
)

// Periods are the node lifecycle controller's timings, kube-controller-
// manager's --node-monitor-period, --node-startup-grace-period and
// --node-monitor-grace-period; zero values take upstream's defaults.
type Periods struct {
	Monitor      time.Duration
	StartupGrace time.Duration
	MonitorGrace time.Duration
}

// DefaultPeriods are kube-controller-manager v1.37's defaults.
var DefaultPeriods = Periods{Monitor: 5 * time.Second, StartupGrace: time.Minute, MonitorGrace: 50 * time.Second}

func (p Periods) withDefaults() Periods {
	if p.Monitor <= 0 {
		p.Monitor = DefaultPeriods.Monitor
	}
	if p.StartupGrace <= 0 {
		p.StartupGrace = DefaultPeriods.StartupGrace
	}
	if p.MonitorGrace <= 0 {
		p.MonitorGrace = DefaultPeriods.MonitorGrace
	}
	return p
}

// Config is what the three controllers need: the client, the logger, where
// pods and nodes list and watch (ControllerConfig.Pods and Nodes; nil:
// through the client), and the periods.
type Config struct {
	informeropts.ControllerConfig
	Periods Periods
}

// Run runs the node lifecycle, taint eviction and pod GC controllers until
// ctx ends.
func Run(ctx context.Context, cfg Config) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("node-lifecycle"))
	factory := cfg.NewFactory()
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	p := cfg.Periods.withDefaults()
	// kube-controller-manager's taint eviction acts as node-controller too.
	clients, err := cfg.ClientsFor("node-controller", "pod-garbage-collector")
	if err != nil {
		return err
	}
	lifecycle, err := upstream.NewNodeLifecycleController(ctx, factory.Coordination().V1().Leases(), pods, nodes,
		factory.Apps().V1().DaemonSets(), clients[0], p.Monitor, p.StartupGrace, p.MonitorGrace,
		evictionRate, secondaryEvictionRate, largeClusterThreshold, unhealthyZoneThreshold)
	if err != nil {
		return fmt.Errorf("node lifecycle controller: %w", err)
	}
	eviction, err := tainteviction.New(ctx, clients[0], pods, nodes, taintEvictionName)
	if err != nil {
		return fmt.Errorf("taint eviction controller: %w", err)
	}
	gc := podgc.NewPodGC(ctx, clients[1], pods, nodes, terminatedPodThreshold)
	return informeropts.RunControllers(ctx, factory, cfg.Logger, lifecycle.Run, eviction.Run, gc.Run)
}
