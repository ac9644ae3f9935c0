// Package disruption runs upstream's disruption controller
// (k8s.io/kubernetes/pkg/controller/disruption) as kube-controller-manager
// v1.37 does: it fills each PodDisruptionBudget's status (the pods it
// expects, how many are healthy and must be, how many may be disrupted)
// from the pods its selector matches and the scale of their controllers.
// Only the wiring is berth's.
package disruption

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/pkg/controller/disruption"

	"github.com/berth/berth/internal/informeropts"
)

const (
	// workers is kube-controller-manager's --concurrent-disruption-syncs default.
	workers = 1
	// mapperReset is how often kube-controller-manager forgets the
	// discovery its REST mapper caches, so kinds served later are found.
	mapperReset = 30 * time.Second
)

// Config is what the controller needs: besides the common part, the
// client configuration its scale client is built from, as
// kube-controller-manager builds it.
type Config struct {
	informeropts.ControllerConfig
	REST *rest.Config
}

// Run runs the controller until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("disruption"))
	factory := cfg.NewFactory()
	if err := emptyWhereUnserved(ctx, factory, cfg.Client.Discovery()); err != nil {
		return err
	}
	// The controllers of pods (RCs, apps kinds, and any kind with a scale
	// subresource) are found through discovery, as kube-controller-manager's
	// controller context finds them.
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cfg.Client.Discovery()))
	scales, err := scale.NewForConfig(cfg.REST, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cfg.Client.Discovery()))
	if err != nil {
		return fmt.Errorf("disruption controller's scale client: %w", err)
	}
	ctrl := upstream.NewDisruptionController(ctx,
		factory.Core().V1().Pods(), factory.Policy().V1().PodDisruptionBudgets(), factory.Core().V1().ReplicationControllers(),
		factory.Apps().V1().ReplicaSets(), factory.Apps().V1().Deployments(), factory.Apps().V1().StatefulSets(),
		cfg.Client, mapper, scales, cfg.Client.Discovery())
	return informeropts.RunControllers(ctx, factory, cfg.Logger,
		informeropts.Workers(ctrl.Run, workers),
		func(ctx context.Context) { wait.Until(mapper.Reset, mapperReset, ctx.Done()) })
}
