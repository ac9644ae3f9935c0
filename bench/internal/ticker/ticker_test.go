package ticker

import (
	"context"
	"github.com/berth/berth/internal/testkit/wait"
	"sync/atomic"
	"testing"
	"time"
)

// fn runs repeatedly until stop, and never after stop has returned.
func TestEveryRunsUntilStopped(t *testing.T) {
	var calls atomic.Int64
	stop := Every(context.Background(), time.Millisecond, func(context.Context) { calls.Add(1) })
	wait.Until(t, 30*time.Second, "three runs", func() bool { return calls.Load() >= 3 })
	stop()
	after := calls.Load()
	// Time for a run that stop failed to prevent: twenty periods.
	time.Sleep(20 * time.Millisecond)
	if calls.Load() != after {
		t.Fatalf("fn ran after stop: %d, then %d", after, calls.Load())
	}
}
