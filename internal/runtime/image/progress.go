package image

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Config.ProgressInterval and Config.StallTimeout.
const (
	defaultProgressInterval = 2 * time.Second
	// As containerd's image_pull_progress_timeout: a registry that stops
	// sending must not hold a pull (and the kubelet waiting on it) forever.
	defaultStallTimeout = 5 * time.Minute
)

// pullProgress counts what a pull has done so far.
type pullProgress struct {
	bytes      atomic.Int64 // compressed bytes downloaded
	unpacked   atomic.Int64 // uncompressed bytes unpacked
	layersDone atomic.Int64
	layers     atomic.Int64
}

// errPullStalled is the cause given to a pull's context when no byte has
// arrived for the stall timeout.
type errPullStalled struct{ after time.Duration }

func (e errPullStalled) Error() string {
	return fmt.Sprintf("no data received for %s", e.after)
}

// watchProgress logs p every progress interval and cancels the pull through
// cancel when no byte has arrived for the stall timeout, until the returned
// stop is called; stop waits for the watching goroutine to end.
func (s *Service) watchProgress(ctx context.Context, image string, p *pullProgress, cancel context.CancelCauseFunc) (stop func()) {
	interval := s.cfg.ProgressInterval
	if interval <= 0 {
		interval = defaultProgressInterval
	}
	stall := s.cfg.StallTimeout
	if stall == 0 {
		stall = defaultStallTimeout
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		lastActivity, lastChange := int64(-1), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				n := p.bytes.Load()
				// Unpacking a large layer after its download is progress too.
				if activity := n + p.unpacked.Load(); activity != lastActivity {
					lastActivity, lastChange = activity, now
				} else if stall > 0 && now.Sub(lastChange) >= stall {
					s.log.WarnContext(ctx, "pull stalled, cancelling", "image", image, "bytes", n, "stalledFor", stall)
					cancel(errPullStalled{after: stall})
					return
				}
				s.log.InfoContext(ctx, "pull progress", "image", image,
					"bytes", n, "layersDone", p.layersDone.Load(), "layers", p.layers.Load())
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
