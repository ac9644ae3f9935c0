// Package podautoscaler runs upstream's horizontal pod autoscaler
// (k8s.io/kubernetes/pkg/controller/podautoscaler) as kube-controller-manager
// v1.37 does: every sync period it reads each HorizontalPodAutoscaler's
// metrics (resource metrics from metrics.k8s.io, custom and external ones
// from their APIs, all served by extension API servers behind the
// aggregator), computes the replicas its target needs, scales the target
// through its scale subresource and writes the autoscaler's status and
// conditions. Only the wiring is berth's.
package podautoscaler

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	upstream "k8s.io/kubernetes/pkg/controller/podautoscaler"
	"k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/metrics/pkg/client/external_metrics"

	"github.com/berth/berth/internal/informeropts"
)

// kube-controller-manager's HPA controller defaults
// (pkg/controller/podautoscaler/config/v1alpha1).
const (
	workers                       = 5
	syncPeriod                    = 15 * time.Second
	downscaleStabilizationWindow  = 5 * time.Minute
	tolerance                     = 0.1
	cpuInitializationPeriod       = 5 * time.Minute
	delayOfInitialReadinessStatus = 30 * time.Second
)

// Config is what the controller needs: besides the common part, the client
// configuration its scale and metrics clients are built from, as
// kube-controller-manager builds them.
type Config struct {
	informeropts.ControllerConfig
	REST *rest.Config
}

// Name is the controller's, and its identity's (ControllerConfig.ClientFor).
const Name = "horizontal-pod-autoscaler"

// Run runs the controller until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("horizontal-pod-autoscaler"))
	client, err := cfg.ClientFor(Name)
	if err != nil {
		return err
	}
	factory := cfg.NewFactory()
	discovery := client.Discovery()
	mapper, scales, err := informeropts.ScaleClient(cfg.REST, discovery)
	if err != nil {
		return fmt.Errorf("autoscaler: %w", err)
	}
	resourceMetrics, err := resourceclient.NewForConfig(cfg.REST)
	if err != nil {
		return fmt.Errorf("autoscaler's resource metrics client: %w", err)
	}
	externalMetrics, err := external_metrics.NewForConfig(cfg.REST)
	if err != nil {
		return fmt.Errorf("autoscaler's external metrics client: %w", err)
	}
	customVersions := custom_metrics.NewAvailableAPIsGetter(discovery)
	metricsClient := metrics.NewRESTMetricsClient(resourceMetrics,
		custom_metrics.NewForConfig(cfg.REST, mapper, customVersions), externalMetrics)
	ctrl := upstream.NewHorizontalController(ctx, client.CoreV1(), scales, client.AutoscalingV2(), mapper, metricsClient,
		factory.Autoscaling().V2().HorizontalPodAutoscalers(), factory.Core().V1().Pods(),
		syncPeriod, downscaleStabilizationWindow, tolerance, cpuInitializationPeriod, delayOfInitialReadinessStatus)
	return informeropts.RunControllers(ctx, factory, cfg.Logger,
		informeropts.Workers(ctrl.Run, workers),
		func(ctx context.Context) {
			custom_metrics.PeriodicallyInvalidate(customVersions, syncPeriod, ctx.Done())
		},
		informeropts.ResetMapper(mapper))
}
