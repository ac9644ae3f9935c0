// Package ticker runs a benchmark's background chore (lease heartbeats, as
// node agents send) at a fixed period until stopped.
package ticker

import (
	"context"
	"time"
)

// Every calls fn every period, starting one period from now, until ctx ends
// or the returned stop is called; stop waits for a running fn to return.
func Every(ctx context.Context, period time.Duration, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				fn(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}
