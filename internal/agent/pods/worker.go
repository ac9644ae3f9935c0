package pods

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// worker converges one pod. Wake-ups coalesce: however many changes arrive
// during a sync, one more sync follows.
type worker struct {
	m    *Manager
	uid  types.UID
	wake chan struct{}

	mu    sync.Mutex
	pod   *corev1.Pod
	known bool // the informer has told us about this pod (pod nil: deleted)
}

func newWorker(m *Manager, uid types.UID) *worker {
	return &worker{m: m, uid: uid, wake: make(chan struct{}, 1)}
}

// update hands the worker the pod's latest object (nil: deleted) and wakes it.
func (w *worker) update(pod *corev1.Pod) {
	w.mu.Lock()
	w.pod, w.known = pod, true
	w.mu.Unlock()
	w.poke()
}

func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// current returns the pod to converge to, or nil when the pod no longer
// exists in the API. A worker started by the relister before the informer
// spoke looks the pod up in the informer's store.
func (w *worker) current() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.known {
		return w.pod
	}
	for _, obj := range w.m.store.List() {
		if p, ok := obj.(*corev1.Pod); ok && p.UID == w.uid {
			return p
		}
	}
	return nil
}

func (w *worker) run(ctx context.Context) {
	log := w.m.log.With("podUID", w.uid)
	for {
		pod := w.current()
		start := time.Now()
		res, err := w.m.syncPod(ctx, w.uid, pod)
		w.m.cfg.Metrics.synced(time.Since(start), err)
		if w.m.afterSync != nil {
			w.m.afterSync(w.uid, err)
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("pod sync failed; will retry", "err", err)
		}
		if res.done {
			w.m.backoff.ResetPrefix(string(w.uid))
			w.m.sent.forget(w.uid)
			w.m.allocs.forget(w.uid)
			return
		}
		next := w.m.cfg.ResyncPeriod
		if res.requeueAfter > 0 && res.requeueAfter < next {
			next = res.requeueAfter
		}
		timer := w.m.clock.NewTimer(next)
		// Resync on the real pace too, so a fake clock in tests only governs back-off.
		resync := time.NewTimer(w.m.cfg.ResyncPeriod)
		select {
		case <-ctx.Done():
			timer.Stop()
			resync.Stop()
			return
		case <-w.wake:
		case <-timer.C():
		case <-resync.C:
		}
		timer.Stop()
		resync.Stop()
	}
}
