// Package etcd implements store.Interface over an etcd v3 client: every write
// is one transaction guarded by a revision, and watches map etcd events (with
// their previous values) to store.Events in revision order. Embedded runs an
// in-process member reached without any socket; External dials a cluster over
// mutual TLS.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berth/berth/internal/store"
)

// Store is a store.Interface over one etcd client.
type Store struct {
	client  *clientv3.Client
	watches watchSource
	logger  *slog.Logger
	leases  *leases // shared by expiring writes
	// closeFn releases what the constructor started (client, embedded member).
	closeFn func() error
	// defragmentMember is the embedded member's defragmentation; nil for
	// an external cluster, whose operators own its maintenance.
	defragmentMember func() error
	// compactor is the running compactor (RunCompactor), if any.
	compactor *atomic.Pointer[compactor]
}

var (
	_ store.Interface         = (*Store)(nil)
	_ store.ProgressRequester = (*Store)(nil)
	_ store.Expiring          = (*Store)(nil)
	_ store.CompactionTracker = (*Store)(nil)
)

// newStore wraps client; closeFn runs on Close.
func newStore(client *clientv3.Client, logger *slog.Logger, closeFn func() error) *Store {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{client: client, watches: clientWatches{client}, logger: logger, leases: &leases{}, closeFn: closeFn, compactor: &atomic.Pointer[compactor]{}}
}

// Close releases the client and, for an embedded member, stops it.
func (s *Store) Close() error {
	if s.closeFn == nil {
		return nil
	}
	return s.closeFn()
}

// Get reads one key with a linearizable read.
func (s *Store) Get(ctx context.Context, key string) (store.KV, error) {
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return store.KV{}, fmt.Errorf("store get %q: %w", key, mapErr(err))
	}
	if len(resp.Kvs) == 0 {
		return store.KV{}, fmt.Errorf("store get %q: %w", key, store.ErrNotFound)
	}
	kv := resp.Kvs[0]
	return store.KV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision}, nil
}

// List reads one page of keys under prefix.
func (s *Store) List(ctx context.Context, prefix string, opts store.ListOptions) (store.ListResult, error) {
	if prefix == "" {
		return store.ListResult{}, errors.New("store list: empty prefix")
	}
	start := prefix
	if opts.StartKey != "" {
		if len(opts.StartKey) < len(prefix) || opts.StartKey[:len(prefix)] != prefix {
			return store.ListResult{}, fmt.Errorf("store list %q: start key %q is outside the prefix", prefix, opts.StartKey)
		}
		start = opts.StartKey
	}
	if opts.Limit < 0 || opts.Revision < 0 {
		return store.ListResult{}, fmt.Errorf("store list %q: negative limit or revision", prefix)
	}
	options := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(opts.Limit)}
	if opts.Revision > 0 {
		options = append(options, clientv3.WithRev(opts.Revision))
	}
	resp, err := s.client.Get(ctx, start, options...)
	if err != nil {
		return store.ListResult{}, fmt.Errorf("store list %q at revision %d: %w", prefix, opts.Revision, mapErr(err))
	}
	out := store.ListResult{KVs: make([]store.KV, 0, len(resp.Kvs)), Revision: resp.Header.Revision, More: resp.More, Count: resp.Count}
	if opts.Revision > 0 {
		out.Revision = opts.Revision
	}
	for _, kv := range resp.Kvs {
		out.KVs = append(out.KVs, store.KV{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision})
	}
	return out, nil
}

// CurrentRevision returns the store's latest revision with a linearizable read.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	// Any key will do: the response header carries the store-wide revision.
	resp, err := s.client.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("store current revision: %w", mapErr(err))
	}
	return resp.Header.Revision, nil
}

// Compact discards history before revision.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if revision <= 0 {
		return fmt.Errorf("store compact: revision %d must be positive", revision)
	}
	if _, err := s.client.Compact(ctx, revision); err != nil {
		return fmt.Errorf("store compact to %d: %w", revision, mapErr(err))
	}
	return nil
}

// mapErr turns etcd errors that callers act on into store sentinels.
func mapErr(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %w", store.ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrRequestTooLarge):
		return fmt.Errorf("%w: %w", store.ErrTooLarge, err)
	case errors.Is(err, rpctypes.ErrTooManyRequests):
		return fmt.Errorf("%w: %w", store.ErrTooManyRequests, err)
	case errors.Is(err, rpctypes.ErrNoSpace):
		// The message keeps etcd's own words, which kube-apiserver's 500
		// carries too: "etcdserver: mvcc: database space exceeded".
		return fmt.Errorf("%w: %w", store.ErrNoSpace, err)
	}
	return err
}
