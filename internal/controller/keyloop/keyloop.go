// Package keyloop is the loop every berth controller runs over its work
// queue: take a key, sync it, forget it on success or requeue it with the
// queue's back-off on failure, until the context ends.
package keyloop

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// Sync brings one key's objects in line; an error asks for a retry.
type Sync[K comparable] func(ctx context.Context, key K) error

// OnError is told of each failed sync (to log or record it) and answers
// whether to retry the key with back-off; false drops it until the next
// event about it (for failures a timer cannot cure).
type OnError[K comparable] func(ctx context.Context, key K, err error) (retry bool)

// Run processes queue with workers goroutines until ctx ends, then shuts
// the queue down and returns once every worker has stopped.
func Run[K comparable](ctx context.Context, queue workqueue.TypedRateLimitingInterface[K], workers int, syncKey Sync[K], onError OnError[K]) {
	stop := context.AfterFunc(ctx, queue.ShutDown)
	defer stop()
	defer queue.ShutDown()
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for ProcessNext(ctx, queue, syncKey, onError) {
			}
		})
	}
	wg.Wait()
}

// ProcessNext handles one key, blocking until there is one; false means
// the queue was shut down. Run loops on it; tests step a controller with it.
func ProcessNext[K comparable](ctx context.Context, queue workqueue.TypedRateLimitingInterface[K], syncKey Sync[K], onError OnError[K]) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	if err := syncKey(ctx, key); err != nil && onError(ctx, key, err) {
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}
