package pods

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Back-off of the kubelet: 10 s doubling to 5 min, for container restarts
// (CrashLoopBackOff) and image pulls (ImagePullBackOff).
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 5 * time.Minute
)

// backoff tracks, per key, the current delay and when it ends. It is
// written here rather than using client-go's flowcontrol.Backoff because
// that one measures from the caller's event time (a CRI exit timestamp,
// wall-clock) against its own clock, which cannot be faked consistently.
type backoff struct {
	clock clock.Clock
	mu    sync.Mutex
	items map[string]backoffItem
}

type backoffItem struct {
	delay time.Duration
	until time.Time
}

func newBackoff(c clock.Clock) *backoff {
	return &backoff{clock: c, items: map[string]backoffItem{}}
}

// Waiting reports whether key is still backing off and how long remains,
// along with the current delay.
func (b *backoff) Waiting(key string) (remaining, delay time.Duration, waiting bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	it, ok := b.items[key]
	if !ok {
		return 0, 0, false
	}
	now := b.clock.Now()
	if now.Before(it.until) {
		return it.until.Sub(now), it.delay, true
	}
	return 0, it.delay, false
}

// Next records another failure of key and starts its next back-off period.
func (b *backoff) Next(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	it := b.items[key]
	switch {
	case it.delay == 0:
		it.delay = backoffInitial
	case it.delay*2 > backoffMax:
		it.delay = backoffMax
	default:
		it.delay *= 2
	}
	it.until = b.clock.Now().Add(it.delay)
	b.items[key] = it
	return it.delay
}

// Reset forgets key (after a success, or when its pod is gone).
func (b *backoff) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.items, key)
}

// ResetPrefix forgets every key of one pod.
func (b *backoff) ResetPrefix(prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.items {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(b.items, k)
		}
	}
}
