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

func TestCompactorKeepsAWindowOfHistory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	s := etcdtest.New(t)
	if err := s.RunCompactor(ctx, 0, 10); err == nil {
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
	current, _ := s.CurrentRevision(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.RunCompactor(ctx, 10*time.Millisecond, 10); err != nil {
			t.Errorf("compactor: %v", err)
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	wait.UntilCtx(t, time.Minute, "the compactor to compact away the first revision", func(ctx context.Context) error {
		pctx, pcancel := context.WithCancel(ctx)
		defer pcancel()
		res := <-s.Watch(pctx, "/registry/k/", first)
		if !errors.Is(res.Err, store.ErrCompacted) {
			return fmt.Errorf("a watch from revision %d got %d events, error %v", first, len(res.Events), res.Err)
		}
		return nil
	})
	// The newest 10 revisions are still watchable.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	res := <-s.Watch(wctx, "/registry/k/", current-10)
	if res.Err != nil || len(res.Events) == 0 {
		t.Fatalf("watch within the kept window: %+v", res)
	}
}
