package apps

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/controller/deployment"

	"github.com/berth/berth/internal/informeropts"
)

// deploymentWorkers is kube-controller-manager's --concurrent-deployment-syncs default.
const deploymentWorkers = 5

// newDeploymentController rolls Deployments out through ReplicaSets.
func newDeploymentController(ctx context.Context, factory informers.SharedInformerFactory, cfg Config) (func(context.Context), error) {
	client, err := cfg.ClientFor("deployment-controller")
	if err != nil {
		return nil, err
	}
	apps := factory.Apps().V1()
	dc, err := deployment.NewDeploymentController(ctx, apps.Deployments(), apps.ReplicaSets(), factory.Core().V1().Pods(), client)
	if err != nil {
		return nil, err
	}
	return informeropts.Workers(dc.Run, deploymentWorkers), nil
}
