package etcd

import (
	"context"
	"fmt"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/mvcc"

	"github.com/berth/berth/internal/store"
)

// memberWatches follows the embedded member's MVCC store directly. The
// etcd client reaches an in-process member through gRPC adapters, so every
// event would pass through five goroutines (the server's send loop, the
// adapter pipe, the client's receive and dispatch loops, its substream)
// before reaching the watch cache; on a busy 2-core machine each of them
// waits its turn behind the request handlers, which cost bench/api's large
// shape tens of milliseconds per event between commit and delivery. Here
// the member's notifier hands events to the one goroutine that converts
// them, as etcd's own gRPC watch server consumes them (v3rpc's send loop,
// whose previous-value lookup this mirrors).
type memberWatches struct {
	kv      mvcc.WatchableKV
	stopped <-chan struct{} // closed when the store closes

	mu      sync.Mutex
	streams map[string]map[*memberWatch]struct{} // by prefix, for progress requests
}

// memberWatch is one Watch call's MVCC watch stream and its one watcher.
type memberWatch struct {
	ws mvcc.WatchStream
	id mvcc.WatchID
}

func newMemberWatches(kv mvcc.WatchableKV, stopped <-chan struct{}) *memberWatches {
	return &memberWatches{kv: kv, stopped: stopped, streams: map[string]map[*memberWatch]struct{}{}}
}

func (m *memberWatches) watch(ctx context.Context, prefix string, fromRevision int64) <-chan store.WatchResult {
	out := make(chan store.WatchResult)
	ws := m.kv.NewWatchStream()
	id, err := ws.Watch(ctx, clientv3.AutoWatchID, []byte(prefix), []byte(clientv3.GetPrefixRangeEnd(prefix)), fromRevision+1)
	if err != nil {
		ws.Close()
		go func() {
			defer close(out)
			sendResult(ctx, out, store.WatchResult{Err: fmt.Errorf("store watch %q from %d: %w", prefix, fromRevision, err)})
		}()
		return out
	}
	w := &memberWatch{ws: ws, id: id}
	m.register(prefix, w)
	go func() {
		defer close(out)
		defer ws.Close()
		defer m.unregister(prefix, w)
		m.follow(ctx, w, prefix, fromRevision, out)
	}()
	return out
}

// maxQueuedEvents bounds what a member watch holds for a slow consumer.
// The member's notifier does not wait for a full watch channel: it sets the
// watcher aside and retries it every 10 ms, and after that only every 100 ms
// in batches, so a consumer that falls behind for a moment would see every
// later event late. Draining the channel into this queue at once keeps the
// watcher on the notifier's fast path; past the bound the queue stops
// taking more and the member's own catch-up takes over.
const maxQueuedEvents = 8192

// follow relays w's responses to out until ctx ends, the store closes or
// the watch ends with an error. It takes responses as soon as the member
// sends them and hands them on merged, as many as the consumer lets pile up.
func (m *memberWatches) follow(ctx context.Context, w *memberWatch, prefix string, fromRevision int64, out chan<- store.WatchResult) {
	var q resultQueue
	for {
		in, send := w.ws.Chan(), chan<- store.WatchResult(nil)
		if q.events >= maxQueuedEvents || q.closed {
			in = nil
		}
		if !q.empty() {
			send = out
		}
		select {
		case resp, ok := <-in:
			if !ok {
				q.push(store.WatchResult{Err: fmt.Errorf("store watch %q: watch stream closed", prefix)})
				continue
			}
			res := m.convert(ctx, resp)
			if res.Err != nil {
				res.Err = fmt.Errorf("store watch %q from %d: %w", prefix, fromRevision, res.Err)
			}
			q.push(res)
		case send <- q.head():
			if q.pop().Err != nil {
				return // an error ends the watch
			}
		case <-m.stopped:
			sendResult(ctx, out, store.WatchResult{Err: fmt.Errorf("store watch %q: store closed", prefix)})
			return
		case <-ctx.Done():
			return
		}
	}
}

// resultQueue holds converted responses not yet taken by the consumer.
// Consecutive results without an error merge into one, so a consumer that
// fell behind catches up with one batch.
type resultQueue struct {
	results []store.WatchResult
	events  int
	closed  bool // an error result is queued; nothing after it counts
}

func (q *resultQueue) empty() bool { return len(q.results) == 0 }

func (q *resultQueue) push(res store.WatchResult) {
	if q.closed {
		return
	}
	q.events += len(res.Events)
	q.closed = res.Err != nil
	if n := len(q.results); n > 0 && q.results[n-1].Err == nil && res.Err == nil {
		last := &q.results[n-1]
		last.Events = append(last.Events, res.Events...)
		last.Revision = max(last.Revision, res.Revision)
		return
	}
	q.results = append(q.results, res)
}

// head is the next result to hand on; the zero result when empty (the
// caller never sends then: its send channel is nil).
func (q *resultQueue) head() store.WatchResult {
	if q.empty() {
		return store.WatchResult{}
	}
	return q.results[0]
}

func (q *resultQueue) pop() store.WatchResult {
	res := q.results[0]
	q.results[0] = store.WatchResult{}
	q.results = q.results[1:]
	q.events -= len(res.Events)
	return res
}

// convert maps one MVCC response; a compaction is a terminal error. Updates
// and deletes get their previous value read at the revision before them,
// as etcd's WithPrevKV does; a previous value compacted away is left out.
func (m *memberWatches) convert(ctx context.Context, resp mvcc.WatchResponse) store.WatchResult {
	if resp.CompactRevision != 0 {
		return compactedResult(resp.CompactRevision)
	}
	if len(resp.Events) == 0 {
		return store.WatchResult{Revision: resp.Revision}
	}
	res := store.WatchResult{Events: make([]store.Event, 0, len(resp.Events))}
	for _, ev := range resp.Events {
		var prev []byte
		if ev.Type == mvccpb.DELETE || ev.Kv.CreateRevision != ev.Kv.ModRevision {
			prev = m.previousValue(ctx, ev.Kv)
		}
		res.Events = append(res.Events, storeEvent(ev, prev))
		res.Revision = ev.Kv.ModRevision
	}
	return res
}

func (m *memberWatches) previousValue(ctx context.Context, kv *mvccpb.KeyValue) []byte {
	r, err := m.kv.Range(ctx, kv.Key, nil, mvcc.RangeOptions{Rev: kv.ModRevision - 1})
	if err != nil || len(r.KVs) == 0 {
		return nil
	}
	return r.KVs[0].Value
}

// requestProgress asks every watch of prefix for a progress notification;
// the member sends one only to a watch that has caught up.
func (m *memberWatches) requestProgress(_ context.Context, prefix string) error {
	select {
	case <-m.stopped:
		return fmt.Errorf("store request progress for %q: store closed", prefix)
	default:
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for w := range m.streams[prefix] {
		w.ws.RequestProgress(w.id)
	}
	return nil
}

func (m *memberWatches) register(prefix string, w *memberWatch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.streams[prefix] == nil {
		m.streams[prefix] = map[*memberWatch]struct{}{}
	}
	m.streams[prefix][w] = struct{}{}
}

func (m *memberWatches) unregister(prefix string, w *memberWatch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.streams[prefix], w)
	if len(m.streams[prefix]) == 0 {
		delete(m.streams, prefix)
	}
}

// sendResult delivers res unless ctx ends first.
func sendResult(ctx context.Context, out chan<- store.WatchResult, res store.WatchResult) bool {
	select {
	case out <- res:
		return true
	case <-ctx.Done():
		return false
	}
}
