package image

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// defaultProgressInterval is how often a running pull logs its progress.
const defaultProgressInterval = 2 * time.Second

// pullProgress counts what a pull has done so far.
type pullProgress struct {
	bytes      atomic.Int64 // compressed bytes downloaded
	layersDone atomic.Int64
	layers     int
}

// reportProgress logs p every interval until the returned stop is called;
// stop waits for the reporting goroutine to end.
func (s *Service) reportProgress(ctx context.Context, image string, p *pullProgress) (stop func()) {
	interval := s.cfg.ProgressInterval
	if interval <= 0 {
		interval = defaultProgressInterval
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.log.InfoContext(ctx, "pull progress", "image", image,
					"bytes", p.bytes.Load(), "layersDone", p.layersDone.Load(), "layers", p.layers)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
