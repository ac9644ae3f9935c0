package watchcache

import (
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

func nodeEntry(ns, name, node string) *entry {
	return &entry{key: "/registry/pods/" + ns + "/" + name, ns: ns,
		fields: newFieldSet(fields.Set{"spec.nodeName": node, "metadata.namespace": ns})}
}

// TestDispatchOffersEventsOnlyToWatchersThatCanMatch checks the index: an
// event reaches the catch-all bucket, its namespace's bucket and the buckets
// of its node before and after the change, and no other watcher.
func TestDispatchOffersEventsOnlyToWatchersThatCanMatch(t *testing.T) {
	t.Parallel()
	x := newWatcherIndex([]string{"spec.nodeName", "metadata.namespace"}, cacheMetrics{})
	mk := func(name string, f filter) *watcher {
		w := &watcher{filter: f, key: x.keyFor(f), input: make(chan *event, 10), done: make(chan struct{})}
		x.add(w)
		return w
	}
	watchers := map[string]*watcher{
		"node-a":       mk("node-a", newFilter("", nil, fields.OneTermEqualSelector("spec.nodeName", "node-a"))),
		"node-b":       mk("node-b", newFilter("", nil, fields.OneTermEqualSelector("spec.nodeName", "node-b"))),
		"node-c":       mk("node-c", newFilter("", nil, fields.OneTermEqualSelector("spec.nodeName", "node-c"))),
		"ns-x":         mk("ns-x", newFilter("x", nil, nil)),
		"ns-y":         mk("ns-y", newFilter("y", nil, nil)),
		"ns-y,node-a":  mk("ns-y,node-a", newFilter("y", nil, fields.OneTermEqualSelector("spec.nodeName", "node-a"))),
		"label (all)":  mk("label", newFilter("", labels.SelectorFromSet(labels.Set{"a": "b"}), nil)),
		"node!=a(all)": mk("node!=a", newFilter("", nil, fields.OneTermNotEqualSelector("spec.nodeName", "node-a"))),
	}
	if got := watchers["ns-y,node-a"].key; got != (indexKey{"spec.nodeName", "node-a"}) {
		t.Fatalf("namespace+node watcher indexed under %v, want the node", got)
	}

	offered := func() map[string]int {
		out := map[string]int{}
		for name, w := range watchers {
			for len(w.input) > 0 {
				<-w.input
				out[name]++
			}
		}
		return out
	}

	// A create on node-b in namespace x.
	x.dispatch(&event{kind: kindPut, rv: 2, cur: nodeEntry("x", "p", "node-b")})
	want := map[string]int{"node-b": 1, "ns-x": 1, "label (all)": 1, "node!=a(all)": 1}
	if got := offered(); !equalCounts(got, want) {
		t.Fatalf("create on node-b offered to %v, want %v", got, want)
	}

	// The pod moves from node-b to node-a: both nodes' watchers are offered
	// it, once each (the namespace filter of "ns-y,node-a" drops it later).
	x.dispatch(&event{kind: kindPut, rv: 3, cur: nodeEntry("x", "p", "node-a"), prev: nodeEntry("x", "p", "node-b")})
	want = map[string]int{"node-a": 1, "node-b": 1, "ns-y,node-a": 1, "ns-x": 1, "label (all)": 1, "node!=a(all)": 1}
	if got := offered(); !equalCounts(got, want) {
		t.Fatalf("move b->a offered to %v, want %v", got, want)
	}
}

func TestDispatchCutsOffAFullWatcherOnly(t *testing.T) {
	t.Parallel()
	x := newWatcherIndex(nil, cacheMetrics{})
	full := &watcher{input: make(chan *event, 1), done: make(chan struct{})}
	roomy := &watcher{input: make(chan *event, 5), done: make(chan struct{})}
	x.add(full)
	x.add(roomy)
	for rv := int64(1); rv <= 3; rv++ {
		x.dispatch(&event{kind: kindPut, rv: rv, cur: nodeEntry("x", "p", "n")})
	}
	select {
	case <-full.done:
	default:
		t.Fatal("watcher with a full buffer was not cut off")
	}
	select {
	case <-roomy.done:
		t.Fatal("watcher with room was cut off")
	default:
	}
	if len(roomy.input) != 3 {
		t.Fatalf("roomy watcher has %d events, want 3", len(roomy.input))
	}
	if _, still := x.buckets[indexKey{}][full]; still {
		t.Fatal("cut-off watcher still indexed")
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
