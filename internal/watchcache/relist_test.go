package watchcache_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/watchcache"
)

// compactingStore is the real store whose first watch reports compaction
// when the test says so, as etcd does when the cache fell too far behind.
type compactingStore struct {
	store.Interface
	trigger chan struct{}
	once    sync.Once
}

func (s *compactingStore) Watch(ctx context.Context, prefix string, from int64) <-chan store.WatchResult {
	first := false
	s.once.Do(func() { first = true })
	if !first {
		return s.Interface.Watch(ctx, prefix, from)
	}
	out := make(chan store.WatchResult, 1)
	go func() {
		defer close(out)
		select {
		case <-s.trigger:
			out <- store.WatchResult{Err: fmt.Errorf("test: %w", store.ErrCompacted)}
		case <-ctx.Done():
		}
	}()
	return out
}

func (s *compactingStore) RequestProgress(ctx context.Context, prefix string) error {
	return s.Interface.(store.ProgressRequester).RequestProgress(ctx, prefix)
}

func TestCompactionMakesTheCacheRelistAndCutOffWatchers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	real := etcdtest.New(t)
	s := &compactingStore{Interface: real, trigger: make(chan struct{})}
	c := startCache(t, podConfig(s))
	_, startRV, _, err := list(ctx, c, watchcache.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	old, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	// Written while the cache's watch is stuck: only a re-list can bring it in.
	r := createPod(t, real, pod("ns", "p", "n", nil))
	close(s.trigger)

	if got := drainUntilClosed(t, old); len(got) != 0 {
		t.Fatalf("watcher before the re-list got %v", got)
	}
	objs, rv, _, err := list(ctx, c, watchcache.ListOptions{}) // consistent: waits for the re-list
	if err != nil || rv < r || fmt.Sprint(names(objs)) != "[ns/p]" {
		t.Fatalf("list after re-list: %v at %d (want >= %d), %v", names(objs), rv, r, err)
	}
	if err := watchErr(t, c, watchcache.WatchOptions{ResourceVersion: rvs(startRV)}); !isGone(err) {
		t.Fatalf("watch from before the re-list: got %v, want 410", err)
	}
}

func TestPeriodicBookmarksOnlyForWatchersThatAllowThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testingclock.NewFakeClock(time.Now())
	c, s := newPodCache(t, func(cfg *watchcache.Config) {
		cfg.Clock = clock
		cfg.BookmarkInterval = time.Minute
	})
	with, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0", AllowBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer with.Stop()
	without, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer without.Stop()
	r1 := createPod(t, s, pod("ns", "a", "n", nil))
	nextEvents(t, with, 1)
	nextEvents(t, without, 1)

	clock.Step(time.Minute)
	if got := nextEvents(t, with, 1)[0]; got != "BOOKMARK@"+rvs(r1) {
		t.Fatalf("after a bookmark interval: %s, want BOOKMARK@%d", got, r1)
	}
	r2 := createPod(t, s, pod("ns", "b", "n", nil))
	if got := nextEvents(t, without, 1)[0]; got != "ADDED ns/b@"+rvs(r2)+" node=n" {
		t.Fatalf("watcher without bookmarks got %s", got)
	}
}

// TestBookmarkBeforeTheWatchDeadline: a watch that allows bookmarks gets
// one two seconds before its deadline, at the cache's revision, so that its
// client resumes from there rather than from its last matching event.
func TestBookmarkBeforeTheWatchDeadline(t *testing.T) {
	t.Parallel()
	clock := testingclock.NewFakeClock(time.Now())
	c, s := newPodCache(t, func(cfg *watchcache.Config) {
		cfg.Clock = clock
		cfg.BookmarkInterval = 24 * time.Hour // no periodic bookmark in this test
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	w, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0", AllowBookmarks: true, Field: fields.OneTermEqualSelector("spec.nodeName", "n1")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	createPod(t, s, pod("ns", "a", "n1", nil))
	nextEvents(t, w, 1) // the watcher is past its initial events
	other := createPod(t, s, pod("ns", "b", "n2", nil))
	if _, _, _, err := list(ctx, c, watchcache.ListOptions{}); err != nil { // consistent: the cache has applied other
		t.Fatal(err)
	}

	clock.Step(time.Hour - 2*time.Second)
	if got := nextEvents(t, w, 1)[0]; got != "BOOKMARK@"+rvs(other) {
		t.Fatalf("two seconds before the deadline: %s, want BOOKMARK@%d (the cache's revision)", got, other)
	}
}
