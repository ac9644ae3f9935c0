package apps

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/controller/statefulset"

	"github.com/berth/berth/internal/informeropts"
)

// statefulSetWorkers is kube-controller-manager's --concurrent-statefulset-syncs default.
const statefulSetWorkers = 5

// newStatefulSetController runs StatefulSets' ordered pods, their claims
// and their revisions.
func newStatefulSetController(ctx context.Context, factory informers.SharedInformerFactory, cfg Config) (func(context.Context), error) {
	client, err := cfg.ClientFor("statefulset-controller")
	if err != nil {
		return nil, err
	}
	core, apps := factory.Core().V1(), factory.Apps().V1()
	ssc := statefulset.NewStatefulSetController(ctx, core.Pods(), apps.StatefulSets(), core.PersistentVolumeClaims(), apps.ControllerRevisions(), client)
	return informeropts.Workers(ssc.Run, statefulSetWorkers), nil
}
