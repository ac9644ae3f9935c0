package etcd_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/store/etcd"
)

// TestWhatAWatchDeliveredIsReadable: a component that learns of an object
// from a watch and then reads it (the scheduler binding a pod it was told
// of) must find it. etcd notifies watchers before a write becomes visible to
// new read transactions, so a serializable read right after the event could
// miss it: berth's scheduler got 404 binding pods that existed and dropped
// them. Reads must wait for what the watch already showed.
func TestWhatAWatchDeliveredIsReadable(t *testing.T) {
	t.Parallel()
	forEachWatchSource(t, testWhatAWatchDeliveredIsReadable)
}

func testWhatAWatchDeliveredIsReadable(t *testing.T, s *etcd.Store) {
	ctx, start := t.Context(), startRevision(t, s)
	const writers, perWriter = 16, 500
	events := s.Watch(ctx, "/registry/raw/", start)

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if _, err := s.Create(ctx, fmt.Sprintf("/registry/raw/%d-%d", w, i), []byte("x")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}

	var misses []string
	for seen := 0; seen < writers*perWriter; {
		res := <-events
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		for _, ev := range res.Events {
			seen++
			if _, err := s.Get(ctx, ev.KV.Key); errors.Is(err, store.ErrNotFound) {
				misses = append(misses, fmt.Sprintf("%s (rev %d)", ev.KV.Key, ev.KV.ModRevision))
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	if len(misses) > 0 {
		t.Errorf("%d watched creations were not found by a read right after: %v", len(misses), misses)
	}
}
