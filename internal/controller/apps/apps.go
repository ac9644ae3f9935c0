// Package apps runs upstream's apps/v1 controllers
// (k8s.io/kubernetes/pkg/controller/{deployment,replicaset,statefulset,daemon})
// with the worker counts kube-controller-manager v1.37 gives them by
// default, over one shared informer factory as kube-controller-manager
// shares its own. Only the wiring is berth's: what each controller
// creates, updates and deletes is upstream's code.
package apps

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"

	"github.com/berth/berth/internal/informeropts"
)

// Config is what the controllers need.
type Config = informeropts.ControllerConfig

// newController builds one controller over the shared factory and returns
// its run function with kube-controller-manager's worker count.
type newController func(ctx context.Context, factory informers.SharedInformerFactory, cfg Config) (func(context.Context), error)

// Run runs the Deployment, ReplicaSet, StatefulSet and DaemonSet
// controllers until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	factory := cfg.NewFactory()
	var runs []func(context.Context)
	for _, c := range []struct {
		name  string
		build newController
	}{
		{"deployment", newDeploymentController}, {"replicaset", newReplicaSetController},
		{"statefulset", newStatefulSetController}, {"daemonset", newDaemonSetController},
	} {
		run, err := c.build(klog.NewContext(ctx, klog.FromContext(ctx).WithName(c.name)), factory, cfg)
		if err != nil {
			return fmt.Errorf("%s controller: %w", c.name, err)
		}
		runs = append(runs, run)
	}
	return informeropts.RunControllers(ctx, factory, cfg.Logger, runs...)
}
