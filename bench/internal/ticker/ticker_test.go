package ticker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// fn runs repeatedly until stop, and never after stop has returned.
func TestEveryRunsUntilStopped(t *testing.T) {
	var calls atomic.Int64
	stop := Every(context.Background(), time.Millisecond, func(context.Context) { calls.Add(1) })
	for calls.Load() < 3 {
		time.Sleep(time.Millisecond) // bounded by the test timeout
	}
	stop()
	after := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if calls.Load() != after {
		t.Fatalf("fn ran after stop: %d, then %d", after, calls.Load())
	}
}
