package watchcache

// namespaceIndex is the pseudo field under which watchers of one namespace
// are indexed.
const namespaceIndex = "metadata.namespace"

// indexKey places a watcher: the field its selector pins to one value, or
// the zero key for watchers that must see every event.
type indexKey struct{ field, value string }

// watcherIndex finds, for an event, only the watchers that could match it.
// It is guarded by Cache.mu.
type watcherIndex struct {
	fields  []string // the configured IndexFields
	buckets map[indexKey]map[*watcher]struct{}
	metrics cacheMetrics
}

func newWatcherIndex(fields []string, metrics cacheMetrics) watcherIndex {
	var own []string
	for _, f := range fields {
		if f != namespaceIndex { // always indexed; listing it twice would deliver twice
			own = append(own, f)
		}
	}
	return watcherIndex{fields: own, buckets: map[indexKey]map[*watcher]struct{}{}, metrics: metrics}
}

// keyFor picks the narrowest bucket for f: an indexed field's exact value,
// else its namespace, else the catch-all bucket.
func (x *watcherIndex) keyFor(f filter) indexKey {
	if f.field != nil {
		for _, name := range x.fields {
			if v, ok := f.field.RequiresExactMatch(name); ok {
				return indexKey{name, v}
			}
		}
	}
	if f.namespace != "" {
		return indexKey{namespaceIndex, f.namespace}
	}
	return indexKey{}
}

func (x *watcherIndex) add(w *watcher) {
	b := x.buckets[w.key]
	if b == nil {
		b = map[*watcher]struct{}{}
		x.buckets[w.key] = b
	}
	if _, dup := b[w]; !dup {
		b[w] = struct{}{}
		addGauge(x.metrics.watchers, 1)
	}
}

func (x *watcherIndex) remove(w *watcher) {
	if b := x.buckets[w.key]; b != nil {
		if _, ok := b[w]; ok {
			delete(b, w)
			addGauge(x.metrics.watchers, -1)
		}
		if len(b) == 0 {
			delete(x.buckets, w.key)
		}
	}
}

// dispatch offers e to every watcher whose bucket the old or new state of the
// object falls in. A watcher with a full buffer is cut off.
func (x *watcherIndex) dispatch(e *event) {
	x.offer(indexKey{}, e)
	x.offerFor(namespaceIndex, e, func(en *entry) string { return en.ns })
	for _, name := range x.fields {
		x.offerFor(name, e, func(en *entry) string { return en.fields.Get(name) })
	}
}

// offerFor offers e to the buckets of field for the event's current and
// previous values (once when they are equal).
func (x *watcherIndex) offerFor(field string, e *event, value func(*entry) string) {
	cur := value(e.cur)
	x.offer(indexKey{field, cur}, e)
	if e.prev != nil {
		if prev := value(e.prev); prev != cur {
			x.offer(indexKey{field, prev}, e)
		}
	}
}

func (x *watcherIndex) offer(key indexKey, e *event) {
	for w := range x.buckets[key] {
		select {
		case w.input <- e:
		default:
			// Too slow: cut it off rather than hold up everyone else; its
			// client resumes from its last resourceVersion or re-lists.
			x.remove(w)
			w.cutOff()
			addCounter(x.metrics.cutOffs, 1)
		}
	}
}

// bookmarkAll queues a bookmark at rv for watchers that asked for them,
// skipping (not cutting off) those with full buffers.
func (x *watcherIndex) bookmarkAll(rv int64) {
	bm := &event{kind: kindBookmark, rv: rv}
	for _, b := range x.buckets {
		for w := range b {
			if w.bookmarks {
				w.offerBookmark(bm)
			}
		}
	}
}

func (x *watcherIndex) cutOffAll() {
	for key, b := range x.buckets {
		for w := range b {
			w.cutOff()
		}
		addGauge(x.metrics.watchers, -float64(len(b)))
		delete(x.buckets, key)
	}
}

// offerBookmark queues bm behind the events already queued for w, unless
// its buffer is full: a bookmark is never worth cutting a watcher off.
func (w *watcher) offerBookmark(bm *event) {
	select {
	case w.input <- bm:
	default:
	}
}
