package watchcache_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berth/berth/internal/testkit/wait"
	"github.com/berth/berth/internal/watchcache"
)

func onNode(node string) fields.Selector { return fields.OneTermEqualSelector("spec.nodeName", node) }

func TestWatchFromRevisionInOrderAndTooOld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, func(cfg *watchcache.Config) { cfg.HistorySize = 5 })
	start := createPod(t, s, pod("ns", "a", "n1", nil))
	r2 := createPod(t, s, pod("ns", "b", "n1", nil))
	p := pod("ns", "a", "n1", map[string]string{"v": "2"})
	r3 := updatePod(t, s, p, start)
	r4, err := s.Delete(ctx, podPrefix+"ns/b", r2)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ADDED ns/b@" + rvs(r2) + " node=n1",
		"MODIFIED ns/a@" + rvs(r3) + " node=n1",
		"DELETED ns/b@" + rvs(r4) + " node=n1",
	}
	w, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: rvs(start)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := nextEvents(t, w, 3); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("watch from %d:\n got %v\nwant %v", start, got, want)
	}
	// Live events follow the replayed history without a gap.
	r5 := createPod(t, s, pod("ns", "c", "n1", nil))
	if got := nextEvents(t, w, 1)[0]; got != "ADDED ns/c@"+rvs(r5)+" node=n1" {
		t.Fatalf("live event after history: %s", got)
	}
	// Resuming from a later revision replays only what came after it.
	w2, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: rvs(r3)})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if got := nextEvents(t, w2, 2); fmt.Sprint(got) != fmt.Sprint([]string{want[2], "ADDED ns/c@" + rvs(r5) + " node=n1"}) {
		t.Fatalf("watch from %d: %v", r3, got)
	}
	// Overflow the history: the first revision is gone.
	rev := r3
	for i := 0; i < 6; i++ {
		p.Labels = map[string]string{"i": fmt.Sprint(i)}
		rev = updatePod(t, s, p, rev)
	}
	if _, _, _, err := list(ctx, c, watchcache.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := watchErr(t, c, watchcache.WatchOptions{ResourceVersion: rvs(start)}); !isGone(err) {
		t.Fatalf("watch below history: got %v, want 410", err)
	}
}

func TestWatchOfOneNodeIgnoresOtherNodesAndSeesMoves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, nil)
	wa, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0", Field: onNode("node-a")})
	if err != nil {
		t.Fatal(err)
	}
	defer wa.Stop()
	wb, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0", Field: onNode("node-b")})
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Stop()

	createPod(t, s, pod("ns", "b1", "node-b", nil))
	p := pod("ns", "mover", "node-a", nil)
	r1 := createPod(t, s, p)
	p.Spec.NodeName = "node-b"
	r2 := updatePod(t, s, p, r1)
	// The object leaving node-a is reported there as DELETED with its old
	// state at the move's revision, and arrives on node-b as ADDED.
	if got := fmt.Sprint(nextEvents(t, wa, 2)); got != fmt.Sprint([]string{
		"ADDED ns/mover@" + rvs(r1) + " node=node-a",
		"DELETED ns/mover@" + rvs(r2) + " node=node-a",
	}) {
		t.Fatalf("node-a watch: %s", got)
	}
	if got := nextEvents(t, wb, 2); got[1] != "ADDED ns/mover@"+rvs(r2)+" node=node-b" {
		t.Fatalf("node-b watch: %v", got)
	}
}

func TestSlowWatcherIsCutOffWithoutDelayingOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The fast watcher only fails if it falls 8 events behind; the slow one,
	// reading nothing, is cut off after 17 (1 in hand, 8 in its result
	// channel, 8 dispatched to it).
	c, s := newPodCache(t, func(cfg *watchcache.Config) { cfg.WatcherBuffer = 8 })
	slow, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	const n = 30
	got := make(chan []string, 1)
	go func() { // not the test goroutine: no t.Fatal here
		var evs []string
		for ev := range fast.ResultChan() {
			if evs = append(evs, eventDesc(ev)); len(evs) == n {
				break
			}
		}
		got <- evs
	}()
	for i := 0; i < n; i++ {
		createPod(t, s, pod("ns", fmt.Sprintf("p%d", i), "n", nil))
	}
	if fastGot := <-got; len(fastGot) != n {
		t.Fatalf("fast watcher got %d events", len(fastGot))
	}
	// The slow watcher got at most what fit before it was cut off, then its
	// channel closed: its client resumes or re-lists.
	if slowGot := drainUntilClosed(t, slow); len(slowGot) >= n {
		t.Fatalf("slow watcher was never cut off: %v", slowGot)
	}
}

// TestWatcherHandsABusyClientItsBacklogAtOnce: events wait in the result
// channel while the client is busy, so that the watch handler, which
// flushes when that channel is empty, writes a burst in one go.
func TestWatcherHandsABusyClientItsBacklogAtOnce(t *testing.T) {
	t.Parallel()
	c, s := newPodCache(t, nil)
	w, err := c.Watch(context.Background(), watchcache.WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const n = 5
	for i := range n {
		createPod(t, s, pod("ns", fmt.Sprintf("p%d", i), "n", nil))
	}
	wait.UntilNil(t, time.Minute, fmt.Sprintf("all %d events to wait in the result channel", n), func() error {
		if got := len(w.ResultChan()); got < n {
			return fmt.Errorf("%d there", got)
		}
		return nil
	})
	if got := nextEvents(t, w, n); len(got) != n {
		t.Fatalf("events: %v", got)
	}
}

func TestWatchListSendsInitialEventsThenBookmark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, nil)
	createPod(t, s, pod("ns", "a", "node-a", nil))
	createPod(t, s, pod("ns", "b", "node-b", nil))
	ra := createPod(t, s, pod("other", "c", "node-a", nil))
	yes := true
	w, err := c.Watch(ctx, watchcache.WatchOptions{Field: onNode("node-a"), SendInitialEvents: &yes, AllowBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var events []watch.Event
	for len(events) < 3 {
		events = append(events, <-w.ResultChan())
	}
	if events[0].Type != watch.Added || events[1].Type != watch.Added {
		t.Fatalf("initial events: %v %v", eventDesc(events[0]), eventDesc(events[1]))
	}
	bm := events[2]
	acc, _ := metaOf(bm.Object)
	if bm.Type != watch.Bookmark || acc.GetAnnotations()[watchcache.InitialEventsAnnotation] != "true" {
		t.Fatalf("third event %s, annotations %v; want the initial-events-end bookmark", eventDesc(bm), acc.GetAnnotations())
	}
	if _, ok := bm.Object.(*corev1.Pod); !ok {
		t.Fatalf("bookmark object %T, want *v1.Pod", bm.Object)
	}
	if rv, _ := strconv.ParseInt(acc.GetResourceVersion(), 10, 64); rv < ra {
		t.Fatalf("bookmark at %d, before the last write %d", rv, ra)
	}
	rd := createPod(t, s, pod("ns", "d", "node-a", nil))
	if got := nextEvents(t, w, 1)[0]; got != "ADDED ns/d@"+rvs(rd)+" node=node-a" {
		t.Fatalf("live event after watch-list: %s", got)
	}
	no := false
	if _, err := c.Watch(ctx, watchcache.WatchOptions{SendInitialEvents: &yes}); !apierrors.IsBadRequest(err) {
		t.Fatalf("sendInitialEvents without bookmarks: got %v, want 400", err)
	}
	w2, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0", SendInitialEvents: &no})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	re := createPod(t, s, pod("ns", "e", "node-b", nil))
	if got := nextEvents(t, w2, 1)[0]; got != "ADDED ns/e@"+rvs(re)+" node=node-b" {
		t.Fatalf("sendInitialEvents=false must start at the current state, got %s", got)
	}
}

func TestWatchLabelSelectorEntryExitAndNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, nil)
	w, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0", Namespace: "ns",
		Label: labels.SelectorFromSet(labels.Set{"app": "web"})})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	createPod(t, s, pod("other", "x", "n", map[string]string{"app": "web"})) // other namespace
	p := pod("ns", "p", "n", map[string]string{"app": "db"})
	r1 := createPod(t, s, p) // not selected
	p.Labels["app"] = "web"
	r2 := updatePod(t, s, p, r1) // enters the selector
	p.Spec.NodeName = "m"
	r3 := updatePod(t, s, p, r2) // stays
	p.Labels["app"] = "db"
	r4 := updatePod(t, s, p, r3) // leaves
	p.Labels["app"] = "web"
	r5 := updatePod(t, s, p, r4) // enters again
	r6, err := s.Delete(ctx, podKey(p), r5)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ADDED ns/p@" + rvs(r2) + " node=n",
		"MODIFIED ns/p@" + rvs(r3) + " node=m",
		"DELETED ns/p@" + rvs(r4) + " node=m",
		"ADDED ns/p@" + rvs(r5) + " node=m",
		"DELETED ns/p@" + rvs(r6) + " node=m",
	}
	if got := nextEvents(t, w, len(want)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("label watch:\n got %v\nwant %v", got, want)
	}
}

// A watcher's View maps the objects of its ADDED (initial and live),
// MODIFIED and DELETED events, never bookmarks, and leaves the shared
// cached objects as they were.
func TestWatchViewMapsEveryObjectButBookmarks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, nil)
	ra := createPod(t, s, pod("ns", "a", "node-a", nil))
	viewed := func(obj runtime.Object) runtime.Object {
		p := obj.(*corev1.Pod).DeepCopy()
		p.Spec.NodeName = "viewed-" + p.Spec.NodeName
		return p
	}
	yes := true
	w, err := c.Watch(ctx, watchcache.WatchOptions{SendInitialEvents: &yes, AllowBookmarks: true, View: viewed})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	first := nextEvents(t, w, 2)
	rb := updatePod(t, s, pod("ns", "a", "node-a", map[string]string{"v": "2"}), ra)
	rc, err := s.Delete(ctx, podPrefix+"ns/a", rb)
	if err != nil {
		t.Fatal(err)
	}
	got := append(first, nextEvents(t, w, 2)...)
	want := []string{"ADDED ns/a@" + rvs(ra) + " node=viewed-node-a", got[1],
		"MODIFIED ns/a@" + rvs(rb) + " node=viewed-node-a", "DELETED ns/a@" + rvs(rc) + " node=viewed-node-a"}
	if fmt.Sprint(got) != fmt.Sprint(want) || !strings.HasPrefix(got[1], "BOOKMARK@") {
		t.Fatalf("viewed watch:\n got %v\nwant %v (second: the initial-events-end bookmark)", got, want)
	}
	plain, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: rvs(ra)})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop()
	if got := nextEvents(t, plain, 1)[0]; got != "MODIFIED ns/a@"+rvs(rb)+" node=node-a" {
		t.Fatalf("a watcher without a view sees %s: the view changed the shared object", got)
	}
}

// TestSharedWatchersGetOneWrapperPerEvent: watchers that share objects get
// the same Config.Share wrapper for an event, made once; a watcher with a
// View of its own gets its view instead.
func TestSharedWatchersGetOneWrapperPerEvent(t *testing.T) {
	t.Parallel()
	type wrapped struct{ runtime.Object }
	var shares atomic.Int32
	c, s := newPodCache(t, func(cfg *watchcache.Config) {
		cfg.Share = func(obj runtime.Object) runtime.Object { shares.Add(1); return &wrapped{obj} }
	})
	ctx := context.Background()
	var shared []watch.Interface
	for range 2 {
		w, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0", Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		shared = append(shared, w)
	}
	viewed, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0", View: func(obj runtime.Object) runtime.Object { return obj.DeepCopyObject() }})
	if err != nil {
		t.Fatal(err)
	}
	defer viewed.Stop()
	createPod(t, s, pod("ns", "a", "n", nil))
	first, second := <-shared[0].ResultChan(), <-shared[1].ResultChan()
	if _, ok := first.Object.(*wrapped); !ok || first.Object != second.Object {
		t.Fatalf("shared watchers got %T and %T, want one wrapper", first.Object, second.Object)
	}
	if ev := <-viewed.ResultChan(); ev.Type != watch.Added {
		t.Fatalf("viewing watcher got %s", eventDesc(ev))
	} else if _, ok := ev.Object.(*corev1.Pod); !ok {
		t.Fatalf("viewing watcher got %T, want its view's *v1.Pod", ev.Object)
	}
	if n := shares.Load(); n != 1 {
		t.Fatalf("Share called %d times for one event, want 1", n)
	}
}

// A watcher reports itself initialized only once its initial events are
// handed on: with more of them than its result buffer holds, not before the
// client has read them.
func TestWatchInitializedAfterItsInitialEvents(t *testing.T) {
	t.Parallel()
	c, s := newPodCache(t, nil)
	const n = 40 // more than a watcher's result buffer
	for i := range n {
		createPod(t, s, pod("ns", "p"+strconv.Itoa(i), "node-a", nil))
	}
	initialized := make(chan struct{})
	w, err := c.Watch(context.Background(), watchcache.WatchOptions{Initialized: func() { close(initialized) }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// The watcher's goroutine is blocked handing on initial events nobody
	// has read, so it cannot have called Initialized.
	select {
	case <-initialized:
		t.Fatal("initialized before the client read the initial events")
	default:
	}
	nextEvents(t, w, n)
	select {
	case <-initialized:
	case <-time.After(30 * time.Second):
		t.Fatal("Initialized not called within 30s of the client reading every initial event")
	}
}
