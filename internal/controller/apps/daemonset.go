package apps

import (
	"context"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/kubernetes/pkg/controller/daemon"

	"github.com/berth/berth/internal/informeropts"
)

// daemonSetWorkers is kube-controller-manager's --concurrent-daemonset-syncs default.
const daemonSetWorkers = 2

// newDaemonSetController runs a DaemonSet's pod on every node it fits,
// backing off from pods that keep failing as kube-controller-manager does.
func newDaemonSetController(ctx context.Context, factory informers.SharedInformerFactory, cfg Config) (func(context.Context), error) {
	client, err := cfg.ClientFor("daemon-set-controller")
	if err != nil {
		return nil, err
	}
	core, apps := factory.Core().V1(), factory.Apps().V1()
	dsc, err := daemon.NewDaemonSetsController(ctx, apps.DaemonSets(), apps.ControllerRevisions(), core.Pods(), core.Nodes(), client,
		flowcontrol.NewBackOff(1*time.Second, 15*time.Minute))
	if err != nil {
		return nil, err
	}
	return informeropts.Workers(dsc.Run, daemonSetWorkers), nil
}
