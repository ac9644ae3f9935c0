// Package replication runs upstream's ReplicationController manager
// (k8s.io/kubernetes/pkg/controller/replication) with the settings
// kube-controller-manager v1.37 gives it by default. Only the wiring is
// berth's: which pods a controller creates and deletes is upstream's code.
package replication

import (
	"context"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/replicaset"
	upstream "k8s.io/kubernetes/pkg/controller/replication"

	"github.com/berth/berth/internal/informeropts"
)

// workers is kube-controller-manager's --concurrent-rc-syncs default.
const workers = 5

// Config is what the manager needs.
type Config = informeropts.ControllerConfig

// Run runs the manager until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("replication"))
	client, err := cfg.ClientFor("replication-controller")
	if err != nil {
		return err
	}
	factory := cfg.NewFactory()
	manager := upstream.NewReplicationManager(ctx, factory.Core().V1().Pods(), factory.Core().V1().ReplicationControllers(),
		client, replicaset.BurstReplicas)
	return informeropts.RunControllers(ctx, factory, cfg.Logger, informeropts.Workers(manager.Run, workers))
}
