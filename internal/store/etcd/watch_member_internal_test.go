package etcd

import (
	"errors"
	"testing"

	"github.com/berth/berth/internal/store"
)

func TestResultQueueMergesUntilAnError(t *testing.T) {
	t.Parallel()
	ev := func(rev int64) store.Event { return store.Event{KV: store.KV{Key: "k", ModRevision: rev}} }
	var q resultQueue
	q.push(store.WatchResult{Events: []store.Event{ev(5)}, Revision: 5})
	q.push(store.WatchResult{Revision: 7}) // a progress notification
	q.push(store.WatchResult{Events: []store.Event{ev(8), ev(9)}, Revision: 9})
	q.push(store.WatchResult{Err: errors.New("compacted")})
	q.push(store.WatchResult{Events: []store.Event{ev(10)}, Revision: 10}) // after the end: dropped

	if q.events != 3 {
		t.Fatalf("queued events = %d, want 3", q.events)
	}
	first := q.pop()
	if len(first.Events) != 3 || first.Revision != 9 || first.Err != nil {
		t.Fatalf("first result = %+v, want the three events merged up to revision 9", first)
	}
	if last := q.pop(); last.Err == nil || len(last.Events) != 0 {
		t.Fatalf("second result = %+v, want the error alone", last)
	}
	if !q.empty() || q.events != 0 {
		t.Fatalf("queue not empty after the error: %+v", q)
	}
}
