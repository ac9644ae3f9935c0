package server

import (
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventBuffer is how many events a subscriber may lag behind before it is
// cut off; a stuck client must never stall container lifecycle operations.
const eventBuffer = 256

// eventHub fans container lifecycle events out to GetContainerEvents streams.
type eventHub struct {
	mu     sync.Mutex
	subs   map[chan *runtimeapi.ContainerEventResponse]struct{}
	closed bool
}

func newEventHub() *eventHub {
	return &eventHub{subs: map[chan *runtimeapi.ContainerEventResponse]struct{}{}}
}

// subscribe returns a channel of events, closed when the subscriber falls
// too far behind or the hub closes, and a function to unsubscribe.
func (h *eventHub) subscribe() (<-chan *runtimeapi.ContainerEventResponse, func()) {
	ch := make(chan *runtimeapi.ContainerEventResponse, eventBuffer)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(ch)
		return ch, func() {}
	}
	h.subs[ch] = struct{}{}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[ch]; ok {
			delete(h.subs, ch)
			close(ch)
		}
	}
}

func (h *eventHub) publish(ev *runtimeapi.ContainerEventResponse) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- ev:
		default:
			delete(h.subs, ch)
			close(ch)
		}
	}
}

func (h *eventHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
}

// subscribers reports how many streams are subscribed.
func (h *eventHub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
