package scheduler

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// sweepInterval is how often the scheduler looks for pending pods it does
// not hold; kube-scheduler flushes its unschedulable pods on the same period.
const sweepInterval = 30 * time.Second

// sweepEvery runs sweep every interval, and checkInformer every
// informerCheckEvery sweeps, until ctx ends.
func (s *Scheduler) sweepEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var absent map[types.UID]bool
	for round := 1; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweep()
			if round%informerCheckEvery == 0 {
				absent, _ = s.checkInformer(ctx, absent)
			}
		}
	}
}

// sweep is a safety net, not a mechanism: every path that takes a pod out
// of the queue should leave it bound, gone, or someone else's. A pending pod
// of this scheduler's that is neither held by the queue nor counted in the
// cache (assumed while its binding is in flight) has fallen out through a
// path that is wrong; it is queued again and logged, so that the path can
// be found. Pods whose latest version the handler has not processed yet
// are left to it: the informer's store is updated before its handlers run.
// It returns how many pods it re-queued.
func (s *Scheduler) sweep() int {
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		s.log.Warn("sweep: listing pods", "err", err)
		return 0
	}
	requeued := 0
	for _, pod := range pods {
		key := keyOf(pod)
		if !s.responsibleFor(pod) || gated(pod) || !s.handledCurrent(pod) || s.queue.holds(key) || s.cache.isAccounted(pod.UID) {
			continue
		}
		s.log.Warn("pending pod was not in the scheduler's queue; queued again", "pod", key, "resourceVersion", pod.ResourceVersion)
		s.queue.add(key)
		requeued++
	}
	return requeued
}
