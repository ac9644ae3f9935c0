package watchcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/store"
)

const (
	// The adaptive history's bounds and the age of events it keeps: those
	// of kube-apiserver's watch cache (its eventFreshDuration and upper
	// bound), with berth's earlier fixed size as the floor.
	minHistorySize          = 1000
	maxHistorySize          = 100 * 1024
	historyFreshness        = 75 * time.Second
	defaultWatcherBuffer    = 100
	defaultBookmarkInterval = time.Minute
	defaultFreshnessTimeout = 3 * time.Second
	listPageSize            = 500
	relistBackoff           = time.Second
)

// Cache is one resource's watch cache. Run fills and maintains it; List, Get
// and Watch may be called from any goroutine.
type Cache struct {
	cfg   Config
	clock clock.WithTicker
	log   *slog.Logger

	ready     chan struct{} // closed once the first list is loaded
	readyOnce sync.Once

	mu       sync.RWMutex
	live     *tree         // the current state; written only by Run
	bytes    int64         // the stored values' bytes of live's entries
	snap     *tree         // read-only clone of live at rv
	rv       int64         // the revision the cache is current to
	rvMoved  chan struct{} // closed and replaced whenever rv advances
	history  history
	watchers watcherIndex
	stopped  bool // Run has returned; no new watchers
	metrics  cacheMetrics
}

// New returns a cache; call Run to fill it.
func New(cfg Config) *Cache {
	if cfg.WatcherBuffer <= 0 {
		cfg.WatcherBuffer = defaultWatcherBuffer
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = defaultBookmarkInterval
	}
	if cfg.FreshnessTimeout <= 0 {
		cfg.FreshnessTimeout = defaultFreshnessTimeout
	}
	c := &Cache{cfg: cfg, clock: cfg.Clock, log: cfg.Logger, ready: make(chan struct{}), rvMoved: make(chan struct{})}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("prefix", cfg.Prefix)
	c.live = newTree()
	c.snap = c.live.Clone()
	c.history = newHistory(cfg.historySizing(), 0, c.snap)
	c.metrics = cfg.Metrics.forPrefix(cfg.Prefix)
	c.watchers = newWatcherIndex(cfg.IndexFields, c.metrics)
	return c
}

// Run lists the prefix, then watches it from the list's revision, re-listing
// when the watch fails (after compaction, for instance). It returns nil when
// ctx ends, after cutting off every watcher.
func (c *Cache) Run(ctx context.Context) error {
	defer c.shutdown()
	if err := c.cfg.validate(); err != nil {
		return err
	}
	ticker := c.clock.NewTicker(c.cfg.BookmarkInterval)
	defer ticker.Stop()
	for ctx.Err() == nil {
		rv, err := c.relist(ctx)
		if err == nil {
			err = c.follow(ctx, rv, ticker.C())
		}
		if ctx.Err() != nil {
			break
		}
		c.log.Warn("watch cache lost its store watch; re-listing", "err", err)
		select {
		case <-c.clock.After(relistBackoff):
		case <-ctx.Done():
		}
	}
	return nil
}

func (cfg *Config) historySizing() historySizing {
	if cfg.HistorySize > 0 {
		return historySizing{min: cfg.HistorySize, max: cfg.HistorySize}
	}
	return historySizing{min: minHistorySize, max: maxHistorySize, fresh: historyFreshness}
}

func (cfg *Config) validate() error {
	switch {
	case cfg.Store == nil:
		return errors.New("watch cache: no store")
	case cfg.Prefix == "" || !strings.HasSuffix(cfg.Prefix, "/"):
		return fmt.Errorf("watch cache: prefix %q must be non-empty and end in /", cfg.Prefix)
	case cfg.Decode == nil:
		return fmt.Errorf("watch cache %s: no Decode", cfg.Prefix)
	}
	return nil
}

// WaitReady blocks until the first list has been loaded or ctx ends.
func (c *Cache) WaitReady(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("watch cache %s not ready: %w", c.cfg.Prefix, ctx.Err())
	}
}

// relist loads the whole prefix at one revision and makes it the cache's
// state, cutting off watchers (their clients re-list, as after a 410).
func (c *Cache) relist(ctx context.Context) (int64, error) {
	fresh := newTree()
	var bytes int64
	opts := store.ListOptions{Limit: listPageSize}
	for {
		page, err := c.cfg.Store.List(ctx, c.cfg.Prefix, opts)
		if err != nil {
			return 0, fmt.Errorf("list %s: %w", c.cfg.Prefix, err)
		}
		opts.Revision = page.Revision
		for _, kv := range page.KVs {
			if e, err := c.newEntry(kv); err != nil {
				c.log.Error("skipping undecodable object", "key", kv.Key, "err", err)
			} else {
				fresh.ReplaceOrInsert(e)
				bytes += int64(e.size)
			}
		}
		if !page.More || len(page.KVs) == 0 {
			break
		}
		opts.StartKey = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
	c.mu.Lock()
	c.live, c.bytes = fresh, bytes
	c.snap = fresh.Clone()
	c.history = newHistory(c.cfg.historySizing(), opts.Revision, c.snap)
	c.watchers.cutOffAll()
	c.advanceLocked(opts.Revision)
	c.mu.Unlock()
	addCounter(c.metrics.relists, 1)
	c.readyOnce.Do(func() { close(c.ready) })
	c.log.Debug("watch cache listed", "objects", fresh.Len(), "revision", opts.Revision)
	return opts.Revision, nil
}

// follow applies the store's watch from rv until it fails or ctx ends, and
// sends periodic bookmarks.
func (c *Cache) follow(ctx context.Context, rv int64, bookmarkTick <-chan time.Time) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := c.cfg.Store.Watch(wctx, c.cfg.Prefix, rv)
	for {
		select {
		case res, ok := <-results:
			if !ok {
				return errors.New("store watch closed")
			}
			if res.Err != nil {
				return res.Err
			}
			c.apply(res)
		case <-bookmarkTick:
			c.mu.Lock()
			c.watchers.bookmarkAll(c.rv)
			c.mu.Unlock()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// queueBookmark offers w a bookmark at the cache's revision; under the lock,
// every event up to it is already queued ahead of it.
func (c *Cache) queueBookmark(w *watcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w.offerBookmark(&event{kind: kindBookmark, rv: c.rv})
}

// decodedEvent is a store event decoded outside the cache's lock.
type decodedEvent struct {
	kind eventKind
	cur  *entry // for a delete without a usable value, only the key is set
	rv   int64
}

// apply decodes a batch outside the lock, then updates state, history and
// watchers under it, one revision at a time.
func (c *Cache) apply(res store.WatchResult) {
	batch := c.decodeBatch(res.Events)
	c.mu.Lock()
	defer c.mu.Unlock()
	var group []*event // the events of one revision
	for _, d := range batch {
		if len(group) > 0 && group[0].rv != d.rv {
			c.commitRevisionLocked(group)
			group = nil
		}
		if d.rv <= c.rv {
			continue // already reflected (cannot happen with an ordered store watch)
		}
		if e := c.applyEventLocked(d); e != nil {
			group = append(group, e)
		}
	}
	c.commitRevisionLocked(group)
	c.advanceLocked(res.Revision)
}

func (c *Cache) decodeBatch(events []store.Event) []decodedEvent {
	batch := make([]decodedEvent, 0, len(events))
	for _, ev := range events {
		kind := toEventKind(ev.Type)
		e, err := c.newEntry(ev.KV)
		if err != nil && kind == kindDelete {
			// A delete must never be lost, even without a usable previous
			// value: the cached object stands in for it (applyEventLocked).
			e, err = &entry{key: ev.KV.Key}, nil
		}
		if err != nil {
			c.log.Error("skipping undecodable event", "key", ev.KV.Key, "revision", ev.KV.ModRevision, "err", err)
			continue
		}
		batch = append(batch, decodedEvent{kind: kind, cur: e, rv: ev.KV.ModRevision})
	}
	return batch
}

// applyEventLocked changes the live state and returns the event watchers
// will see, or nil if there is nothing to report.
func (c *Cache) applyEventLocked(d decodedEvent) *event {
	e := &event{kind: d.kind, rv: d.rv, cur: d.cur}
	e.prev, _ = c.live.Get(d.cur)
	if e.prev != nil {
		c.bytes -= int64(e.prev.size)
	}
	if d.kind == kindPut {
		c.live.ReplaceOrInsert(d.cur)
		c.bytes += int64(d.cur.size)
		return e
	}
	if e.prev == nil {
		return nil // deleting what the cache never had
	}
	if d.cur.obj == nil {
		e.cur = &entry{key: e.prev.key, ns: e.prev.ns, obj: e.prevObjectAtRV(), labels: e.prev.labels, fields: e.prev.fields}
	}
	c.live.Delete(d.cur)
	return e
}

// commitRevisionLocked snapshots the state after one revision's events,
// records them in history and hands them to watchers.
func (c *Cache) commitRevisionLocked(group []*event) {
	if len(group) == 0 {
		return
	}
	snap := c.live.Clone()
	now := c.clock.Now()
	for _, e := range group {
		e.at = now
	}
	c.snap = snap
	c.history.pushBatch(group, snap, now)
	for _, e := range group {
		c.watchers.dispatch(e)
	}
	c.advanceLocked(group[0].rv)
	addCounter(c.metrics.events, float64(len(group)))
}

// advanceLocked moves rv forward and wakes readers waiting for freshness.
func (c *Cache) advanceLocked(rv int64) {
	if rv <= c.rv {
		return
	}
	c.rv = rv
	setGauge(c.metrics.revision, float64(rv))
	close(c.rvMoved)
	c.rvMoved = make(chan struct{})
}

func (c *Cache) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	c.watchers.cutOffAll()
}

// newEntry decodes kv and computes its selector attributes.
func (c *Cache) newEntry(kv store.KV) (*entry, error) {
	obj, err := c.cfg.Decode(kv)
	if err != nil {
		return nil, fmt.Errorf("decode %s@%d: %w", kv.Key, kv.ModRevision, err)
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("object at %s has no metadata: %w", kv.Key, err)
	}
	e := &entry{key: kv.Key, ns: acc.GetNamespace(), obj: obj, size: len(kv.Value)}
	var set fields.Set
	if c.cfg.Attrs != nil {
		if e.labels, set, err = c.cfg.Attrs(obj); err != nil {
			return nil, fmt.Errorf("attributes of %s: %w", kv.Key, err)
		}
	} else {
		e.labels = labels.Set(acc.GetLabels())
		set = fields.Set{"metadata.name": acc.GetName(), "metadata.namespace": acc.GetNamespace()}
	}
	e.fields = newFieldSet(set)
	return e, nil
}

func formatRV(rv int64) string { return strconv.FormatInt(rv, 10) }
