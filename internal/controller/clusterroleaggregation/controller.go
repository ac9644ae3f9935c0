// Package clusterroleaggregation runs upstream's clusterrole-aggregation
// controller (k8s.io/kubernetes/pkg/controller/clusterroleaggregation) as
// kube-controller-manager v1.37 does: every ClusterRole with an
// aggregationRule gets the rules of the ClusterRoles its selectors match,
// so a ClusterRole labelled rbac.authorization.k8s.io/aggregate-to-view:
// "true" extends view (and, through view's own label, edit and admin).
// Only the wiring is berth's.
package clusterroleaggregation

import (
	"context"

	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/pkg/controller/clusterroleaggregation"

	"github.com/berth/berth/internal/informeropts"
)

// workers is kube-controller-manager's (it starts the controller with 5).
const workers = 5

// Run runs the controller until ctx ends. cfg.Pods is not used.
func Run(ctx context.Context, cfg informeropts.ControllerConfig) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("clusterrole-aggregation"))
	client, err := cfg.ClientFor("clusterrole-aggregation-controller")
	if err != nil {
		return err
	}
	factory := cfg.NewFactory()
	ctrl := upstream.NewClusterRoleAggregation(factory.Rbac().V1().ClusterRoles(), client.RbacV1())
	return informeropts.RunControllers(ctx, factory, cfg.Logger, informeropts.Workers(ctrl.Run, workers))
}
