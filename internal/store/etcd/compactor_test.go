package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/testkit/wait"
)

// kube-apiserver's compactor compacts, each interval, to the revision it
// saw one interval before: history written before that is gone, and the
// store reports the revision so its caches can refuse it too.
func TestCompactorCompactsToThePreviousIntervalsRevision(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	s := etcdtest.New(t)
	if err := s.RunCompactor(ctx, 0); err == nil {
		t.Fatal("zero interval accepted")
	}
	var first int64
	for i := 0; i < 30; i++ {
		rev, err := s.Create(ctx, "/registry/k/"+string(rune('a'+i)), []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		if first == 0 {
			first = rev
		}
	}
	if got := s.CompactedRevision(); got != 0 {
		t.Fatalf("compacted revision %d before any compactor ran", got)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.RunCompactor(ctx, 50*time.Millisecond); err != nil {
			t.Errorf("compactor: %v", err)
		}
	}()
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { cancel(); wg.Wait() }) }
	defer stop()

	wait.UntilCtx(t, time.Minute, "the compactor to compact away the first revision", func(ctx context.Context) error {
		if compacted := s.CompactedRevision(); compacted <= first {
			return fmt.Errorf("compacted revision %d", compacted)
		}
		_, err := s.List(ctx, "/registry/k/", store.ListOptions{Revision: first})
		if !errors.Is(err, store.ErrCompacted) {
			return fmt.Errorf("a list at revision %d: %v", first, err)
		}
		return nil
	})
	// The compacted revision the store reports is never ahead of etcd's
	// own (the compactor learns of each compaction after it is done; it may
	// lag behind), so every read older than it fails as compacted.
	stop()
	compacted := s.CompactedRevision()
	if _, err := s.List(context.Background(), "/registry/k/", store.ListOptions{Revision: compacted - 1}); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("a list at revision %d, older than the compacted %d: %v; want compacted", compacted-1, compacted, err)
	}
}
