package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/berth/berth/internal/store"
)

// watchSource is how a Store follows changes: through the etcd client (any
// cluster), or for the embedded member from its MVCC store (memberWatches).
type watchSource interface {
	watch(ctx context.Context, prefix string, fromRevision int64) <-chan store.WatchResult
	requestProgress(ctx context.Context, prefix string) error
}

// Watch streams the changes under prefix after fromRevision. The goroutine it
// starts ends, closing the channel, when ctx ends or the watch fails.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) <-chan store.WatchResult {
	return s.watches.watch(ctx, prefix, fromRevision)
}

// RequestProgress asks for a progress notification on the watches under
// prefix, so a watcher that saw no events learns the current revision.
func (s *Store) RequestProgress(ctx context.Context, prefix string) error {
	return s.watches.requestProgress(ctx, prefix)
}

// clientWatches follows changes through the etcd client.
type clientWatches struct{ client *clientv3.Client }

func (s clientWatches) watch(ctx context.Context, prefix string, fromRevision int64) <-chan store.WatchResult {
	out := make(chan store.WatchResult)
	// WithPrevKV gives deletes and updates their previous value;
	// WithProgressNotify lets idle watchers learn that the revision moved on.
	wch := s.client.Watch(watchStream(ctx, prefix), prefix, clientv3.WithPrefix(), clientv3.WithRev(fromRevision+1),
		clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	go func() {
		defer close(out)
		for resp := range wch {
			res, final := convertWatchResponse(resp)
			if res.Err != nil {
				res.Err = fmt.Errorf("store watch %q from %d: %w", prefix, fromRevision, res.Err)
			}
			if !sendResult(ctx, out, res) || final {
				return
			}
		}
		if ctx.Err() == nil {
			// The client closed the watch without an error response (client shut down).
			sendResult(ctx, out, store.WatchResult{Err: fmt.Errorf("store watch %q: watch channel closed", prefix)})
		}
	}()
	return out
}

// convertWatchResponse maps one etcd response; final reports a terminal error.
func convertWatchResponse(resp clientv3.WatchResponse) (store.WatchResult, bool) {
	if resp.CompactRevision != 0 {
		return compactedResult(resp.CompactRevision), true
	}
	if err := resp.Err(); err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			err = fmt.Errorf("%w: %w", store.ErrCompacted, err)
		}
		return store.WatchResult{Err: err}, true
	}
	if resp.IsProgressNotify() {
		return store.WatchResult{Revision: resp.Header.Revision}, false
	}
	res := store.WatchResult{Events: make([]store.Event, 0, len(resp.Events))}
	for _, ev := range resp.Events {
		var prev []byte
		if ev.PrevKv != nil {
			prev = ev.PrevKv.Value
		}
		res.Events = append(res.Events, storeEvent((*mvccpb.Event)(ev), prev))
		res.Revision = ev.Kv.ModRevision
	}
	return res, false
}

// compactedResult ends a watch whose start was compacted away.
func compactedResult(compactRevision int64) store.WatchResult {
	return store.WatchResult{Err: fmt.Errorf("%w: compacted at %d", store.ErrCompacted, compactRevision)}
}

// storeEvent maps one etcd event whose previous value is prev (nil: none);
// a delete carries the deleted value as its KV.Value.
func storeEvent(ev *mvccpb.Event, prev []byte) store.Event {
	out := store.Event{KV: store.KV{Key: string(ev.Kv.Key), Value: ev.Kv.Value, ModRevision: ev.Kv.ModRevision}, PrevValue: prev}
	if ev.Type == mvccpb.DELETE {
		out.Type = store.EventDelete
		out.KV.Value = prev
	}
	return out
}

func (s clientWatches) requestProgress(ctx context.Context, prefix string) error {
	if err := s.client.RequestProgress(watchStream(ctx, prefix)); err != nil {
		return fmt.Errorf("store request progress for %q: %w", prefix, err)
	}
	return nil
}

// watchStream gives the watches of each prefix their own gRPC stream:
// clientv3 multiplexes watches whose contexts carry the same metadata onto
// one stream, and etcd answers a progress request only once every watcher
// on the stream has caught up, so one busy resource lagging behind (events,
// say) would otherwise hold back the consistent reads of all the others.
func watchStream(ctx context.Context, prefix string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "berth-watch-prefix", prefix)
}
