package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/store/etcd"
	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/testkit/wait"
)

// nextEvents reads results until n events arrived, failing on an error result.
func nextEvents(t *testing.T, ch <-chan store.WatchResult, n int) []store.Event {
	t.Helper()
	var out []store.Event
	for len(out) < n {
		res, ok := <-ch
		if !ok {
			t.Fatalf("watch closed after %d of %d events", len(out), n)
		}
		if res.Err != nil {
			t.Fatalf("watch error after %d events: %v", len(out), res.Err)
		}
		out = append(out, res.Events...)
	}
	return out
}

// forEachWatchSource runs test on an embedded store twice: watching the
// member's MVCC store directly (what Embedded does) and through the etcd
// client (what External does), so both keep the same contract.
func forEachWatchSource(t *testing.T, test func(t *testing.T, s *etcd.Store)) {
	t.Run("member", func(t *testing.T) { test(t, etcdtest.New(t)) })
	t.Run("client", func(t *testing.T) { test(t, etcd.WithClientWatches(etcdtest.New(t))) })
}

// startRevision is s's current revision, the point a test's watch starts from.
func startRevision(t *testing.T, s *etcd.Store) int64 {
	t.Helper()
	start, err := s.CurrentRevision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return start
}

func TestWatchOrderPrevValuesAndResume(t *testing.T) {
	t.Parallel()
	forEachWatchSource(t, testWatchOrderPrevValuesAndResume)
}

func testWatchOrderPrevValuesAndResume(t *testing.T, s *etcd.Store) {
	ctx, start := t.Context(), startRevision(t, s)
	ch := s.Watch(ctx, "/registry/pods/", start)

	r1, _ := s.Create(ctx, "/registry/pods/ns/a", []byte("a1"))
	if _, err := s.Create(ctx, "/registry/nodes/n", []byte("other prefix")); err != nil {
		t.Fatal(err)
	}
	r2, _ := s.Update(ctx, "/registry/pods/ns/a", r1, []byte("a2"))
	r3, _ := s.Create(ctx, "/registry/pods/ns/b", []byte("b1"))
	r4, err := s.Delete(ctx, "/registry/pods/ns/a", r2)
	if err != nil {
		t.Fatal(err)
	}

	want := []store.Event{
		{Type: store.EventPut, KV: store.KV{Key: "/registry/pods/ns/a", Value: []byte("a1"), ModRevision: r1}},
		{Type: store.EventPut, KV: store.KV{Key: "/registry/pods/ns/a", Value: []byte("a2"), ModRevision: r2}, PrevValue: []byte("a1")},
		{Type: store.EventPut, KV: store.KV{Key: "/registry/pods/ns/b", Value: []byte("b1"), ModRevision: r3}},
		{Type: store.EventDelete, KV: store.KV{Key: "/registry/pods/ns/a", Value: []byte("a2"), ModRevision: r4}, PrevValue: []byte("a2")},
	}
	got := nextEvents(t, ch, len(want))
	assertEvents(t, got, want)

	// Resuming from any revision yields exactly the events after it.
	for i, from := range []int64{start, r1, r2, r3} {
		rctx, rcancel := context.WithCancel(ctx)
		got := nextEvents(t, s.Watch(rctx, "/registry/pods/", from), len(want)-i)
		rcancel()
		assertEvents(t, got, want[i:])
	}
}

func assertEvents(t *testing.T, got, want []store.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			t.Fatalf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestWatchCompactedRevision(t *testing.T) {
	t.Parallel()
	forEachWatchSource(t, testWatchCompactedRevision)
}

func testWatchCompactedRevision(t *testing.T, s *etcd.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r1, _ := s.Create(ctx, "/registry/pods/ns/a", []byte("1"))
	r2, _ := s.Update(ctx, "/registry/pods/ns/a", r1, []byte("2"))
	if _, err := s.Update(ctx, "/registry/pods/ns/a", r2, []byte("3")); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, r2); err != nil {
		t.Fatalf("compact: %v", err)
	}
	res, ok := <-s.Watch(ctx, "/registry/pods/", r1-1)
	if !ok || !errors.Is(res.Err, store.ErrCompacted) {
		t.Fatalf("watch from compacted revision: got %+v (open %v), want ErrCompacted", res, ok)
	}
	if _, err := s.List(ctx, "/registry/pods/", store.ListOptions{Revision: r1}); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("list at compacted revision: got %v, want ErrCompacted", err)
	}
	// From the compaction revision on, history is still there.
	got := nextEvents(t, s.Watch(ctx, "/registry/pods/", r2), 1)
	if string(got[0].KV.Value) != "3" {
		t.Fatalf("watch after compaction point: %+v", got)
	}
}

func TestRequestProgressReportsCurrentRevision(t *testing.T) {
	t.Parallel()
	forEachWatchSource(t, func(t *testing.T, s *etcd.Store) {
		ctx, start := t.Context(), startRevision(t, s)
		ch := s.Watch(ctx, "/registry/pods/", start)
		awaitProgressPast(ctx, t, s, ch, start)
	})
}

// TestProgressOfOnePrefixIsNotHeldBackByAnother: etcd answers a progress
// request only when every watcher on the stream has caught up; a watcher
// of another prefix that has not (here one waiting for a future revision,
// which etcd counts the same way) must not keep this prefix's watch from
// learning the current revision.
func TestProgressOfOnePrefixIsNotHeldBackByAnother(t *testing.T) {
	t.Parallel()
	forEachWatchSource(t, func(t *testing.T, s *etcd.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := startRevision(t, s)
		_ = s.Watch(ctx, "/registry/events/", start+1000)
		ch := s.Watch(ctx, "/registry/pods/", start)
		awaitProgressPast(ctx, t, s, ch, start)
	})
}

// awaitProgressPast writes under another prefix than ch's and asks for
// progress until ch reports a revision covering that write.
func awaitProgressPast(ctx context.Context, t *testing.T, s *etcd.Store, ch <-chan store.WatchResult, start int64) {
	t.Helper()
	// A write under another prefix moves the revision without an event here.
	other, err := s.Create(ctx, "/registry/nodes/n", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	// etcd ignores a request while the watch is still catching up, and a
	// notification may predate the write: ask until one covers it.
	// etcd ignores a request while the watch is still catching up, and a
	// notification may predate the write: ask until one covers it. The
	// watch hands on a notification only to a reader that is waiting, so
	// each turn waits a while for one.
	wait.UntilCtx(t, time.Minute, fmt.Sprintf("a progress notification past revision %d", other), func(rctx context.Context) error {
		if err := s.RequestProgress(rctx, "/registry/pods/"); err != nil {
			return err
		}
		turn, cancel := context.WithTimeout(rctx, 100*time.Millisecond)
		defer cancel()
		select {
		case res, open := <-ch:
			if !open || res.Err != nil || len(res.Events) != 0 {
				t.Fatalf("unexpected watch result %+v (open %v)", res, open)
			}
			if res.Revision < other {
				return fmt.Errorf("a notification at revision %d", res.Revision)
			}
			return nil
		case <-ctx.Done():
			t.Fatalf("the watch's context ended: %v", ctx.Err())
		case <-turn.Done():
		}
		return errors.New("no notification")
	})
}

func TestListPagesAtOneRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	for i := 0; i < 5; i++ {
		if _, err := s.Create(ctx, fmt.Sprintf("/registry/pods/ns/p%d", i), []byte{byte('0' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, "/registry/podsecurity/x", []byte("not a pod")); err != nil {
		t.Fatal(err)
	}
	page1, err := s.List(ctx, "/registry/pods/", store.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page1.KVs) != 2 || !page1.More {
		t.Fatalf("page 1: %d keys, more=%v", len(page1.KVs), page1.More)
	}
	// A write after page 1 must not show up in later pages read at page 1's revision.
	if _, err := s.Create(ctx, "/registry/pods/ns/p9", []byte("late")); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range page1.KVs {
		keys = append(keys, kv.Key)
	}
	next := page1.KVs[1].Key + "\x00"
	for {
		page, err := s.List(ctx, "/registry/pods/", store.ListOptions{Limit: 2, StartKey: next, Revision: page1.Revision})
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range page.KVs {
			keys = append(keys, kv.Key)
		}
		if !page.More {
			break
		}
		next = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
	want := "[/registry/pods/ns/p0 /registry/pods/ns/p1 /registry/pods/ns/p2 /registry/pods/ns/p3 /registry/pods/ns/p4]"
	if fmt.Sprint(keys) != want {
		t.Fatalf("paged keys %v, want %s", keys, want)
	}
	if _, err := s.List(ctx, "/registry/pods/", store.ListOptions{StartKey: "/registry/nodes/a"}); err == nil {
		t.Fatal("start key outside the prefix was accepted")
	}
}

// TestClosingTheStoreEndsItsWatches: a watch of a closed store ends with an
// error instead of waiting forever for a member that is gone.
func TestClosingTheStoreEndsItsWatches(t *testing.T) {
	t.Parallel()
	s, err := etcd.Embedded(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ch := s.Watch(t.Context(), "/registry/pods/", startRevision(t, s))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	res, ok := <-ch
	if !ok || res.Err == nil {
		t.Fatalf("watch of a closed store: got %+v (open %v), want an error", res, ok)
	}
	if _, ok := <-ch; ok {
		t.Fatal("watch channel still open after its error")
	}
}

// TestMemberWatchStaysOnTheFastPathWhileItsConsumerWaits: the member sets a
// watcher whose channel is full aside and then serves it only every 100 ms,
// so a member watch takes responses as they come, whether or not its
// consumer is reading, and hands them on later, all of them, in order.
// Serial: the gauge it reads counts every member's watchers in the process,
// so another test's watches would show up in it.
func TestMemberWatchStaysOnTheFastPathWhileItsConsumerWaits(t *testing.T) {
	s := etcdtest.New(t)
	ctx := t.Context()
	ch := s.Watch(ctx, "/registry/pods/", startRevision(t, s))
	const writes = 400 // well past the member's 128 responses per watch channel
	var revs []int64
	for i := range writes {
		rev, err := s.Create(ctx, fmt.Sprintf("/registry/pods/ns/p%03d", i), []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	if slow := slowWatchers(t); slow != 0 {
		t.Errorf("the member counts %v slow watchers while the consumer waited, want 0", slow)
	}
	got := nextEvents(t, ch, writes)
	for i, ev := range got {
		if ev.KV.ModRevision != revs[i] {
			t.Fatalf("event %d at revision %d, want %d", i, ev.KV.ModRevision, revs[i])
		}
	}
}

// slowWatchers reads etcd's own gauge of watchers it has set aside.
func slowWatchers(t *testing.T) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "etcd_debugging_mvcc_slow_watcher_total" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("etcd_debugging_mvcc_slow_watcher_total is not registered")
	return 0
}
