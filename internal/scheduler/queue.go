package scheduler

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// podQueue is the scheduler's work queue of pod keys (client-go's
// rate-limited workqueue, which dedups keys and holds back a key being
// worked on) plus a record of every key the scheduler holds: queued,
// backing off, parked until a cluster change, or being worked on. The
// record is what lets the periodic sweep (sweep.go) tell a pending pod the
// scheduler has lost track of from one it is merely waiting on; workqueue
// does not expose its members.
type podQueue struct {
	q workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// held maps each held key to the generation of its latest enqueue, so
	// that finishing one delivery does not release a key enqueued again
	// meanwhile (workqueue re-delivers such a key after Done).
	held map[string]uint64
	gen  uint64
}

// newPodQueue is the queue of pod keys, handed out by priority
// (priorityOf: the pod's spec.priority) as kube-scheduler does.
func newPodQueue(initialBackoff, maxBackoff time.Duration, priorityOf func(key string) int32) *podQueue {
	ordered := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "scheduler", Queue: newPriorityOrder(priorityOf)})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: "scheduler", Queue: ordered})
	return &podQueue{
		q: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](initialBackoff, maxBackoff),
			workqueue.TypedRateLimitingQueueConfig[string]{DelayingQueue: delaying}),
		held: map[string]uint64{},
	}
}

// hold records key as held; the caller enqueues it under the same lock, so
// the sweep never sees a key in the queue but not held.
func (p *podQueue) hold(key string, enqueue func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.held[key] = p.gen
	enqueue()
}

func (p *podQueue) add(key string) { p.hold(key, func() { p.q.Add(key) }) }

func (p *podQueue) addAfter(key string, d time.Duration) {
	p.hold(key, func() { p.q.AddAfter(key, d) })
}

// addRateLimited re-queues key after its back-off.
func (p *podQueue) addRateLimited(key string) {
	p.hold(key, func() { p.q.AddRateLimited(key) })
}

// delivery is one key handed out by get, with the generation it was held at.
type delivery struct {
	key string
	gen uint64
}

// get blocks for the next key; ok is false once the queue is shut down.
func (p *podQueue) get() (delivery, bool) {
	key, shutdown := p.q.Get()
	if shutdown {
		return delivery{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	gen, ok := p.held[key]
	if !ok {
		// Released while a re-delivery was pending: held again now.
		p.gen++
		gen = p.gen
		p.held[key] = gen
	}
	return delivery{key: key, gen: gen}, true
}

// release ends the scheduler's work on a delivered key for good (the pod is
// bound, gone, or not this scheduler's): its back-off is reset, and it is
// no longer held unless it was enqueued again since the delivery.
func (p *podQueue) release(d delivery) {
	p.q.Forget(d.key)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[d.key] == d.gen {
		delete(p.held, d.key)
	}
}

// done tells the workqueue one delivery is handled (released or requeued).
func (p *podQueue) done(d delivery) { p.q.Done(d.key) }

func (p *podQueue) holds(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.held[key]
	return ok
}

func (p *podQueue) shutDown() { p.q.ShutDown() }
