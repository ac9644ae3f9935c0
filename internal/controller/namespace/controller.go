// Package namespace runs two of kube-controller-manager's controllers with
// its default settings: the namespace controller
// (k8s.io/kubernetes/pkg/controller/namespace), which empties a deleted
// namespace of every served resource, pods first, records its progress in
// the namespace's conditions and then finalizes it; and the ServiceAccounts
// controller (pkg/controller/serviceaccount), which gives every namespace
// its "default" ServiceAccount. Only the wiring is berth's.
package namespace

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/pkg/controller/namespace"
	"k8s.io/kubernetes/pkg/controller/serviceaccount"

	"github.com/berth/berth/internal/informeropts"
)

// kube-controller-manager's defaults: --concurrent-namespace-syncs,
// --namespace-sync-period, and the ServiceAccounts controller's one worker.
const (
	namespaceWorkers      = 10
	namespaceResync       = 5 * time.Minute
	serviceAccountWorkers = 1
)

// Config is what the controllers need: the namespace controller deletes
// every kind through Metadata, as upstream's does.
type Config struct {
	informeropts.ControllerConfig
	Metadata metadata.Interface
}

// Run runs both controllers until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	logger := klog.FromContext(ctx).WithName("namespace")
	ctx = klog.NewContext(ctx, logger)
	clients, err := cfg.ClientsFor("namespace-controller", "service-account-controller")
	if err != nil {
		return err
	}
	factory := cfg.NewFactory()
	namespaces := factory.Core().V1().Namespaces()
	emptier := upstream.NewNamespaceController(ctx, clients[0], cfg.Metadata, clients[0].Discovery().ServerPreferredNamespacedResources,
		namespaces, namespaceResync, corev1.FinalizerKubernetes)
	accounts, err := serviceaccount.NewServiceAccountsController(logger, factory.Core().V1().ServiceAccounts(), namespaces, clients[1],
		serviceaccount.DefaultServiceAccountsControllerOptions())
	if err != nil {
		return fmt.Errorf("service accounts controller: %w", err)
	}
	return informeropts.RunControllers(ctx, factory, cfg.Logger,
		informeropts.Workers(emptier.Run, namespaceWorkers), informeropts.Workers(accounts.Run, serviceAccountWorkers))
}
