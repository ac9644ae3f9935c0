package watchcache

import (
	"sort"
	"sync"

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
	cur  *entry // put: the new state; delete: the object as deleted (at rv)
	prev *entry // the state before; nil for a create
	// snap is the whole state right after the batch holding this event, for
	// Exact and paginated lists at older revisions.
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
type history struct {
	events   []*event // ring storage
	start, n int
	baseRV   int64
	baseSnap *tree
}

func newHistory(size int, rv int64, snap *tree) history {
	return history{events: make([]*event, size), baseRV: rv, baseSnap: snap}
}

func (h *history) at(i int) *event { return h.events[(h.start+i)%len(h.events)] }

// pushBatch appends the events of one revision, evicting whole revisions
// from the old end (and moving base past them) to make room.
func (h *history) pushBatch(batch []*event) {
	if len(batch) == 0 {
		return
	}
	if len(batch) > len(h.events) {
		// One revision larger than the ring: keep only its resulting state.
		for h.n > 0 {
			h.pop()
		}
		h.baseRV, h.baseSnap = batch[0].rv, batch[0].snap
		return
	}
	for h.n+len(batch) > len(h.events) {
		oldest := h.at(0)
		for h.n > 0 && h.at(0).rv == oldest.rv {
			h.pop()
		}
		h.baseRV, h.baseSnap = oldest.rv, oldest.snap
	}
	for _, e := range batch {
		h.events[(h.start+h.n)%len(h.events)] = e
		h.n++
	}
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

// snapshotAt returns the state at revision rv, or nil if it is older than the history.
func (h *history) snapshotAt(rv int64) *tree {
	if rv < h.baseRV {
		return nil
	}
	i := sort.Search(h.n, func(i int) bool { return h.at(i).rv > rv })
	if i == 0 {
		return h.baseSnap
	}
	return h.at(i - 1).snap
}

func toEventKind(t store.EventType) eventKind {
	if t == store.EventDelete {
		return kindDelete
	}
	return kindPut
}
