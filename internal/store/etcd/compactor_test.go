package etcd_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/etcdtest"
)

func TestCompactorKeepsAWindowOfHistory(t *testing.T) {
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

	// Wait for the compactor to act (however long that takes on this machine).
	for {
		pctx, pcancel := context.WithCancel(ctx)
		res := <-s.Watch(pctx, "/registry/k/", first)
		pcancel()
		if errors.Is(res.Err, store.ErrCompacted) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The newest 10 revisions are still watchable.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	res := <-s.Watch(wctx, "/registry/k/", current-10)
	if res.Err != nil || len(res.Events) == 0 {
		t.Fatalf("watch within the kept window: %+v", res)
	}
}
