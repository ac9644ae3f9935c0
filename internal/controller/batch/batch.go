// Package batch runs upstream's batch/v1 controllers
// (k8s.io/kubernetes/pkg/controller/{job,cronjob}) with the worker counts
// kube-controller-manager v1.37 gives them by default, over one shared
// informer factory. Only the wiring is berth's: which pods a Job runs and
// when a CronJob starts a Job is upstream's code.
package batch

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/cronjob"
	"k8s.io/kubernetes/pkg/controller/job"

	"github.com/berth/berth/internal/informeropts"
)

// Worker counts: kube-controller-manager's --concurrent-job-syncs and
// --concurrent-cron-job-syncs defaults.
const (
	jobWorkers     = 5
	cronJobWorkers = 5
)

// Config is what the controllers need.
type Config = informeropts.ControllerConfig

// Run runs the Job and CronJob controllers until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	factory := cfg.NewFactory()
	batch := factory.Batch().V1()
	// Without the WorkloadWithJob gate (off by default in 1.37)
	// kube-controller-manager passes no Workload or PodGroup informers.
	jobClient, err := cfg.ClientFor("job-controller")
	if err != nil {
		return err
	}
	cronJobClient, err := cfg.ClientFor("cronjob-controller")
	if err != nil {
		return err
	}
	jc, err := job.NewController(klog.NewContext(ctx, klog.FromContext(ctx).WithName("job")), jobClient,
		factory.Core().V1().Pods(), batch.Jobs(), nil, nil)
	if err != nil {
		return fmt.Errorf("job controller: %w", err)
	}
	cjc, err := cronjob.NewControllerV2(klog.NewContext(ctx, klog.FromContext(ctx).WithName("cronjob")), batch.Jobs(), batch.CronJobs(), cronJobClient)
	if err != nil {
		return fmt.Errorf("cronjob controller: %w", err)
	}
	return informeropts.RunControllers(ctx, factory, cfg.Logger,
		informeropts.Workers(jc.Run, jobWorkers), informeropts.Workers(cjc.Run, cronJobWorkers))
}
