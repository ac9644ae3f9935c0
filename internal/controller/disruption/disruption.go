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

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/pkg/controller/disruption"

	"github.com/berth/berth/internal/informeropts"
)

const (
	// workers is kube-controller-manager's --concurrent-disruption-syncs default.
	workers = 1
)

// Config is what the controller needs: besides the common part, the
// client configuration its scale client is built from, as
// kube-controller-manager builds it (the disruption-controller's).
type Config struct {
	informeropts.ControllerConfig
	REST *rest.Config
}

// Name is the controller's, and its identity's (ControllerConfig.ClientFor).
const Name = "disruption-controller"

// Run runs the controller until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("disruption"))
	client, err := cfg.ClientFor(Name)
	if err != nil {
		return err
	}
	factory := cfg.NewFactory()
	if err := emptyWhereUnserved(ctx, factory, client.Discovery()); err != nil {
		return err
	}
	// The controllers of pods (RCs, apps kinds, and any kind with a scale
	// subresource) are found through discovery, as kube-controller-manager's
	// controller context finds them.
	mapper, scales, err := informeropts.ScaleClient(cfg.REST, client.Discovery())
	if err != nil {
		return fmt.Errorf("disruption controller: %w", err)
	}
	ctrl := upstream.NewDisruptionController(ctx,
		factory.Core().V1().Pods(), factory.Policy().V1().PodDisruptionBudgets(), factory.Core().V1().ReplicationControllers(),
		factory.Apps().V1().ReplicaSets(), factory.Apps().V1().Deployments(), factory.Apps().V1().StatefulSets(),
		client, mapper, scales, client.Discovery())
	return informeropts.RunControllers(ctx, factory, cfg.Logger,
		informeropts.Workers(ctrl.Run, workers),
		informeropts.ResetMapper(mapper))
}
