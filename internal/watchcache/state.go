package watchcache

import (
	"sort"
	"sync"
	"time"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth/berth/internal/store"
)

// entry is one cached object with the attributes selectors match against.
// Entries are immutable once built and shared by every reader.
type entry struct {
	key    string
	ns     string
	obj    runtime.Object
	labels labels.Set
	fields *fieldSet
	size   int // the stored value's bytes, for Stats
}

type tree = btree.BTreeG[*entry]

func newTree() *tree {
	return btree.NewG(32, func(a, b *entry) bool { return a.key < b.key })
}

// eventKind extends store.EventType with bookmarks, which only watchers see.
type eventKind int

const (
	kindPut eventKind = iota
	kindDelete
	kindBookmark
)

// event is one change as every watcher sees it; it is shared, read-only.
type event struct {
	kind eventKind
	rv   int64
	at   time.Time // when the cache applied it; how long history keeps it
	cur  *entry    // put: the new state; delete: the object as deleted (at rv)
	prev *entry    // the state before; nil for a create
	// snap is the whole state right after this event's revision, for Exact
	// and paginated lists at older revisions. History keeps it for one
	// revision in snapshotEvery (and for those a list asked for): each kept
	// snapshot holds its own copy of the tree's changed path, about 2 KB
	// for 20k objects, which over 75 seconds of events outweighed the
	// events themselves. Other states are rebuilt from the nearest earlier
	// one (history.stateAfter). Guarded by Cache.mu.
	snap *tree

	// prevAtRV is prev's object with resourceVersion rv, sent as DELETED to
	// watchers the object leaves; built at most once, on first need.
	prevOnce sync.Once
	prevAtRV runtime.Object

	// shared is cur's object as Config.Share wrapped it for the watchers
	// that share objects; built at most once, on first need.
	sharedOnce sync.Once
	shared     runtime.Object
}

func (e *event) sharedObject(share func(runtime.Object) runtime.Object) runtime.Object {
	e.sharedOnce.Do(func() { e.shared = share(e.cur.obj) })
	return e.shared
}

func (e *event) prevObjectAtRV() runtime.Object {
	e.prevOnce.Do(func() {
		obj := e.prev.obj.DeepCopyObject()
		if acc, err := meta.Accessor(obj); err == nil {
			acc.SetResourceVersion(formatRV(e.rv))
		}
		e.prevAtRV = obj
	})
	return e.prevAtRV
}

// history is a bounded ring of recent events in revision order, with the
// state just before its oldest event (base), so it can answer "what changed
// after N" and "what was the state at N" for any N >= baseRV.
//
// Its capacity adapts as kube-apiserver's watch cache does: when full, it
// doubles (up to sizing.max) rather than evict an event younger than
// sizing.fresh, and halves (down to sizing.min) once even its newest
// quarter is older than that.
// A client cut off or timed out therefore resumes from any revision it saw
// within that time, whatever the churn; a fixed ring gave 410s under load.
type history struct {
	events        []*event // ring storage
	start, n      int
	baseRV        int64
	baseSnap      *tree
	sizing        historySizing
	sinceSnapshot int // revisions pushed since the last kept snapshot
}

func newHistory(sizing historySizing, rv int64, snap *tree) history {
	return history{events: make([]*event, sizing.min), baseRV: rv, baseSnap: snap,
		sizing: historySizing{min: sizing.min, max: max(sizing.max, sizing.min), fresh: sizing.fresh}}
}

// historySizing is how a cache sizes its history.
type historySizing struct {
	min, max int
	fresh    time.Duration // 0: a fixed ring of min
}

func (h *history) at(i int) *event { return h.events[(h.start+i)%len(h.events)] }

// snapshotEvery is how often (in revisions) history keeps a snapshot; a
// list at a revision between two replays at most this many events.
const snapshotEvery = 32

// pushBatch appends the events of one revision, applied at now, with snap,
// the state after them, resizing or evicting whole revisions from the old
// end (and moving base past them) to make room.
func (h *history) pushBatch(batch []*event, snap *tree, now time.Time) {
	if len(batch) == 0 {
		return
	}
	if h.n+len(batch) > len(h.events) {
		h.adapt(now, len(batch))
	}
	if len(batch) > len(h.events) {
		// One revision larger than the ring: keep only its resulting state.
		for h.n > 0 {
			h.pop()
		}
		h.baseRV, h.baseSnap = batch[0].rv, snap
		return
	}
	h.evict(h.n + len(batch) - len(h.events))
	if h.sinceSnapshot++; h.sinceSnapshot >= snapshotEvery {
		h.sinceSnapshot = 0
		for _, e := range batch {
			e.snap = snap
		}
	}
	for _, e := range batch {
		h.events[(h.start+h.n)%len(h.events)] = e
		h.n++
	}
}

// adapt resizes a full ring about to take incoming more events.
func (h *history) adapt(now time.Time, incoming int) {
	capacity := len(h.events)
	switch {
	case h.sizing.fresh <= 0 || h.n == 0:
	case now.Sub(h.at(0).at) < h.sizing.fresh && capacity < h.sizing.max:
		h.resize(min(max(2*capacity, h.n+incoming), h.sizing.max))
	case capacity > h.sizing.min && h.n > capacity/4 && now.Sub(h.at(h.n-capacity/4).at) > h.sizing.fresh:
		h.resize(max(capacity/2, h.sizing.min))
	}
}

// resize moves the ring into capacity slots, evicting the oldest revisions
// that do not fit.
func (h *history) resize(capacity int) {
	h.evict(h.n - capacity)
	events := make([]*event, capacity)
	for i := range h.n {
		events[i] = h.at(i)
	}
	h.events, h.start = events, 0
}

// evict drops at least count of the oldest events, whole revisions; base
// moves past them.
func (h *history) evict(count int) {
	if count <= 0 || h.n == 0 {
		return
	}
	i := min(count, h.n)
	for i < h.n && h.at(i).rv == h.at(i-1).rv {
		i++
	}
	last, base := h.at(i-1), h.stateAfter(i)
	for range i {
		h.pop()
	}
	h.baseRV, h.baseSnap = last.rv, base
}

// stateAfter is the state after the first i events (i ends a revision):
// the nearest kept snapshot, or base, with the events after it applied to
// a clone. Cloning writes to the cloned tree's copy-on-write marker, so
// the caller holds Cache.mu for writing.
func (h *history) stateAfter(i int) *tree {
	j := i - 1
	for j >= 0 && h.at(j).snap == nil {
		j--
	}
	start := h.baseSnap
	if j >= 0 {
		start = h.at(j).snap
	}
	if j == i-1 {
		return start
	}
	state := start.Clone()
	for k := j + 1; k < i; k++ {
		if e := h.at(k); e.kind == kindDelete {
			state.Delete(e.cur)
		} else {
			state.ReplaceOrInsert(e.cur)
		}
	}
	return state
}

func (h *history) pop() {
	h.events[h.start] = nil
	h.start = (h.start + 1) % len(h.events)
	h.n--
}

// since returns the events with revision > rv, or ok=false if rv is older
// than the history.
func (h *history) since(rv int64) ([]*event, bool) {
	if rv < h.baseRV {
		return nil, false
	}
	i := sort.Search(h.n, func(i int) bool { return h.at(i).rv > rv })
	out := make([]*event, 0, h.n-i)
	for ; i < h.n; i++ {
		out = append(out, h.at(i))
	}
	return out, true
}

// snapshotAt returns the state at revision rv, or nil if it is older than
// the history. A rebuilt state is kept on its revision's events, so that
// the pages of one list rebuild it once; the caller holds Cache.mu for
// writing (stateAfter).
func (h *history) snapshotAt(rv int64) *tree {
	if rv < h.baseRV {
		return nil
	}
	i := h.eventsThrough(rv)
	if i == 0 {
		return h.baseSnap
	}
	state := h.stateAfter(i)
	for k := i - 1; k >= 0 && h.at(k).rv == h.at(i-1).rv; k-- {
		h.at(k).snap = state
	}
	return state
}

// keptSnapshotAt is the state at rv when history holds it without a
// rebuild (at its base, or at a revision whose snapshot is kept or was
// rebuilt before); it only reads, so Cache.mu held for reading suffices.
func (h *history) keptSnapshotAt(rv int64) (*tree, bool) {
	if rv < h.baseRV {
		return nil, false
	}
	i := h.eventsThrough(rv)
	if i == 0 {
		return h.baseSnap, true
	}
	snap := h.at(i - 1).snap
	return snap, snap != nil
}

// eventsThrough is how many of history's events have a revision <= rv.
func (h *history) eventsThrough(rv int64) int {
	return sort.Search(h.n, func(i int) bool { return h.at(i).rv > rv })
}

func toEventKind(t store.EventType) eventKind {
	if t == store.EventDelete {
		return kindDelete
	}
	return kindPut
}
