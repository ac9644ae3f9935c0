package keyloop

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// TestRetriesFailuresAndDropsWhatOnErrorRefuses: a failing key comes back
// until it succeeds; a key OnError declines is not retried; Run returns
// once the context ends.
func TestRetriesFailuresAndDropsWhatOnErrorRefuses(t *testing.T) {
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	var mu sync.Mutex
	attempts := map[string]int{}
	succeeded := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, queue, 2, func(_ context.Context, key string) error {
			mu.Lock()
			defer mu.Unlock()
			attempts[key]++
			switch {
			case key == "flaky" && attempts[key] < 3:
				return errors.New("not yet")
			case key == "hopeless":
				return errors.New("never")
			case key == "flaky":
				close(succeeded)
			}
			return nil
		}, func(_ context.Context, key string, _ error) bool { return key != "hopeless" })
	}()
	queue.Add("hopeless")
	queue.Add("flaky")
	<-succeeded
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if attempts["flaky"] != 3 || attempts["hopeless"] != 1 {
		t.Fatalf("attempts = %v, want flaky 3 (two retries) and hopeless 1 (dropped)", attempts)
	}
	if queue.NumRequeues("flaky") != 0 {
		t.Errorf("a key that succeeded keeps %d requeues: it must be forgotten", queue.NumRequeues("flaky"))
	}
}
