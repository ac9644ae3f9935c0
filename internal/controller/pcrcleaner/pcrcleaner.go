// Package pcrcleaner runs upstream's PodCertificateRequest cleaner
// (k8s.io/kubernetes/pkg/controller/certificates/cleaner) as
// kube-controller-manager v1.37 does: every five minutes it deletes the
// requests older than fifteen minutes, by which time every issuance has
// finished one way or the other, so requests do not pile up as pods
// renew their certificates. Only the wiring is berth's.
package pcrcleaner

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/certificates/cleaner"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/informeropts"
)

// Config is what the cleaner needs.
type Config = informeropts.ControllerConfig

// kube-controller-manager's settings.
const (
	threshold = 15 * time.Minute
	period    = 5 * time.Minute
)

// Run runs the cleaner until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	return run(ctx, cfg, clock.RealClock{}, period)
}

// run is Run with the clock that ages requests and the period of its scans.
func run(ctx context.Context, cfg Config, clk clock.PassiveClock, period time.Duration) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("podcertificaterequest-cleaner"))
	client, err := cfg.ClientFor("podcertificaterequestcleaner")
	if err != nil {
		return err
	}
	factory := cfg.NewFactory()
	c := cleaner.NewPCRCleanerController(client, factory.Certificates().V1().PodCertificateRequests(), clk, threshold, period)
	return informeropts.RunControllers(ctx, factory, cfg.Logger, informeropts.Workers(c.Run, 1))
}
