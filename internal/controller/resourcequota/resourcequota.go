// Package resourcequota runs upstream's resource quota controller
// (k8s.io/kubernetes/pkg/controller/resourcequota) with upstream's quota
// evaluators and kube-controller-manager v1.37's defaults: it fills each
// ResourceQuota's status.used, and recounts what the objects it watches
// give back when they go. Only the wiring is berth's.
package resourcequota

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller"
	upstream "k8s.io/kubernetes/pkg/controller/resourcequota"
	"k8s.io/kubernetes/pkg/quota/v1/install"

	"github.com/berth/berth/internal/informeropts"
)

// kube-controller-manager's defaults: --concurrent-resource-quota-syncs,
// --resource-quota-sync-period, its --min-resync-period for replenishment,
// and the period at which it rediscovers the resources to count.
const (
	workers            = 5
	fullResync         = 5 * time.Minute
	replenishResync    = 12 * time.Hour
	rediscoverInterval = 30 * time.Second
)

// Config is what the controller needs: besides the common part, a
// metadata client for the resources it counts by their metadata.
type Config struct {
	informeropts.ControllerConfig
	Metadata metadata.Interface
}

// Run runs the controller until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("resourcequota"))
	client, err := cfg.ClientFor("resourcequota-controller")
	if err != nil {
		return err
	}
	typed := cfg.NewFactory()
	meta := metadatainformer.NewSharedInformerFactory(cfg.Metadata, 0)
	config, err := install.NewQuotaConfigurationForControllers(generic.ListerFuncForResourceFunc(typed.ForResource), typed)
	if err != nil {
		return fmt.Errorf("quota configuration: %w", err)
	}
	discover := client.Discovery().ServerPreferredNamespacedResources
	started := make(chan struct{})
	ctrl, err := upstream.NewController(ctx, &upstream.ControllerOptions{
		QuotaClient:               client.CoreV1(),
		ResourceQuotaInformer:     typed.Core().V1().ResourceQuotas(),
		ResyncPeriod:              controller.StaticResyncPeriodFunc(fullResync),
		InformerFactory:           informerfactory.NewInformerFactory(typed, meta),
		ReplenishmentResyncPeriod: controller.StaticResyncPeriodFunc(replenishResync),
		DiscoveryFunc:             discover,
		IgnoredResourcesFunc:      config.IgnoredResources,
		InformersStarted:          started,
		Registry:                  generic.NewRegistry(config.Evaluators()),
		UpdateFilter:              install.DefaultUpdateFilter(),
	})
	if err != nil {
		return fmt.Errorf("resource quota controller: %w", err)
	}
	// The controller's monitors start their informers only once told the
	// factories run; its Run waits for their caches itself.
	meta.Start(ctx.Done())
	defer meta.Shutdown()
	return informeropts.RunControllers(ctx, typed, cfg.Logger,
		func(context.Context) { close(started) },
		informeropts.Workers(ctrl.Run, workers),
		func(ctx context.Context) { ctrl.Sync(ctx, discover, rediscoverInterval) })
}
