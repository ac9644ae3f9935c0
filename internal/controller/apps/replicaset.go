package apps

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/controller/replicaset"

	"github.com/berth/berth/internal/informeropts"
)

// replicaSetWorkers is kube-controller-manager's --concurrent-replicaset-syncs default.
const replicaSetWorkers = 5

// newReplicaSetController keeps each ReplicaSet's pods at its replicas.
func newReplicaSetController(ctx context.Context, factory informers.SharedInformerFactory, cfg Config) (func(context.Context), error) {
	client, err := cfg.ClientFor("replicaset-controller")
	if err != nil {
		return nil, err
	}
	rsc := replicaset.NewReplicaSetController(ctx, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), client, replicaset.BurstReplicas)
	return informeropts.Workers(rsc.Run, replicaSetWorkers), nil
}
