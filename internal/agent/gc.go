package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/berth/berth/internal/agent/gc"
	"github.com/berth/berth/internal/agent/podcgroup"
)

// runGarbageCollector collects dead containers, unused images and orphaned
// pod cgroups (cfg.GC) until ctx ends, reporting its failures as events on
// the Node. A zero policy (ContainerPeriod 0, as in tests that build a Config by hand)
// leaves it off.
func (a *Agent) runGarbageCollector(ctx context.Context, podSource gc.PodSource, cgroups *podcgroup.Cleaner) error {
	if a.cfg.GC.ContainerPeriod == 0 {
		return nil
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: a.client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	collector, err := gc.New(gc.Config{
		NodeName:  a.cfg.NodeName,
		Runtime:   a.rt.Runtime,
		Images:    a.rt.Images,
		Pods:      podSource,
		PodLogDir: a.cfg.podLogDir(),
		Cgroups:   cgroups,
		Recorder:  broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "berth-agent", Host: a.cfg.NodeName}),
		Policy:    a.cfg.GC,
		Clock:     a.clock,
		Metrics:   a.metrics.gc,
		Logger:    a.log.With("component", "gc"),
	})
	if err != nil {
		return err
	}
	return collector.Run(ctx)
}
