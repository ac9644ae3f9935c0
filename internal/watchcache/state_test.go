package watchcache

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// pushRevisions pushes one single-event revision per step, from rv, each
// applied step later than the one before.
func pushRevisions(h *history, rv int64, n int, at time.Time, step time.Duration) (int64, time.Time) {
	for range n {
		rv++
		at = at.Add(step)
		h.pushBatch([]*event{{rv: rv, at: at, cur: &entry{key: "k"}}}, newTree(), at)
	}
	return rv, at
}

func TestFixedHistoryEvictsWholeRevisions(t *testing.T) {
	h := newHistory(historySizing{min: 3, max: 3}, 10, newTree())
	t0 := time.Unix(0, 0)
	h.pushBatch([]*event{{rv: 11, at: t0, cur: &entry{key: "a"}}, {rv: 11, at: t0, cur: &entry{key: "b"}}}, newTree(), t0)
	h.pushBatch([]*event{{rv: 12, at: t0, cur: &entry{key: "c"}}}, newTree(), t0)
	if _, ok := h.since(10); !ok {
		t.Fatal("since(10) gone before anything was evicted")
	}
	h.pushBatch([]*event{{rv: 13, at: t0, cur: &entry{key: "d"}}}, newTree(), t0)
	if len(h.events) != 3 || h.baseRV != 11 {
		t.Fatalf("capacity %d, base %d; want a fixed ring of 3 that evicted revision 11 whole", len(h.events), h.baseRV)
	}
	if _, ok := h.since(10); ok {
		t.Fatal("since(10) still answered after revision 11 was evicted")
	}
	if evs, ok := h.since(11); !ok || len(evs) != 2 {
		t.Fatalf("since(11) = %d events, %v; want revisions 12 and 13", len(evs), ok)
	}
}

func TestAdaptiveHistoryKeepsFreshEventsThenShrinks(t *testing.T) {
	const fresh = time.Minute
	h := newHistory(historySizing{min: 4, max: 16, fresh: fresh}, 0, newTree())
	t0 := time.Unix(0, 0)

	// Ten revisions a second apart are all fresh: the ring grows to keep them.
	rv, at := pushRevisions(&h, 0, 10, t0, time.Second)
	if evs, ok := h.since(0); !ok || len(evs) != 10 {
		t.Fatalf("since(0) = %d events, %v; want all 10 kept (capacity %d)", len(evs), ok, len(h.events))
	}
	// Up to its upper bound, then it evicts even fresh events.
	rv, at = pushRevisions(&h, rv, 10, at, time.Second)
	if len(h.events) != 16 || h.n != 16 || h.baseRV != 4 {
		t.Fatalf("capacity %d holding %d from base %d; want 16 holding 16 from base 4", len(h.events), h.n, h.baseRV)
	}
	// A full ring whose newest quarter is stale halves, down to its floor.
	rv, at = pushRevisions(&h, rv, 1, at.Add(2*fresh), time.Second)
	if len(h.events) != 8 {
		t.Fatalf("capacity %d after a push two minutes on; want 16 halved to 8", len(h.events))
	}
	for range 6 {
		rv, at = pushRevisions(&h, rv, 4, at.Add(2*fresh), 0)
	}
	if len(h.events) != 4 {
		t.Fatalf("capacity %d after only stale pushes; want the floor of 4", len(h.events))
	}
	if evs, ok := h.since(rv - 4); !ok || len(evs) != 4 || evs[3].rv != rv {
		t.Fatalf("since(%d) = %v, %v; want the last 4 revisions after shrinking", rv-4, evs, ok)
	}
}

// History keeps a snapshot every snapshotEvery revisions and rebuilds the
// states between them, also its base as it evicts: every revision's state
// is what applying the events up to it gives.
func TestHistoryRebuildsStatesBetweenSnapshots(t *testing.T) {
	const revisions = 3*snapshotEvery + 5
	h := newHistory(historySizing{min: 2 * snapshotEvery, max: 2 * snapshotEvery}, 0, newTree())
	live := newTree()
	want := map[int64][]string{} // the keys after each revision
	for rv := int64(1); rv <= revisions; rv++ {
		e := &event{rv: rv, cur: &entry{key: fmt.Sprintf("k%02d", rv%7)}}
		if rv%3 == 0 {
			e.kind = kindDelete
			live.Delete(e.cur)
		} else {
			live.ReplaceOrInsert(e.cur)
		}
		h.pushBatch([]*event{e}, live.Clone(), time.Time{})
		want[rv] = keysOf(live)
	}
	if h.baseRV <= snapshotEvery {
		t.Fatalf("base %d: the ring of %d should have evicted past a kept snapshot", h.baseRV, 2*snapshotEvery)
	}
	if got := keysOf(h.baseSnap); !slices.Equal(got, want[h.baseRV]) {
		t.Errorf("base at %d holds %v, want %v", h.baseRV, got, want[h.baseRV])
	}
	for rv := h.baseRV; rv <= revisions; rv++ {
		if got := keysOf(h.snapshotAt(rv)); !slices.Equal(got, want[rv]) {
			t.Errorf("state at %d: %v, want %v", rv, got, want[rv])
		}
	}
	if h.snapshotAt(h.baseRV-1) != nil {
		t.Errorf("state at %d, before the base, was answered", h.baseRV-1)
	}
}

func keysOf(t *tree) []string {
	var keys []string
	t.Ascend(func(e *entry) bool {
		keys = append(keys, e.key)
		return true
	})
	return keys
}
