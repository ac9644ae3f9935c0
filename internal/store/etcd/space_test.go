package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/store/etcd"
	"github.com/berth/berth/internal/testkit/wait"
)

// spaceQuota is a backend quota small enough to fill in a test.
const spaceQuota = 8 << 20

// openTinyMember starts an embedded member with a tiny quota and a space
// keeper that checks often.
func openTinyMember(t *testing.T, p etcd.SpacePolicy) *etcd.Store {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := etcd.Embedded(context.Background(), t.TempDir(), log, etcd.WithQuotaBackendBytes(spaceQuota), etcd.WithSpacePolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestNoSpaceRefusesWritesKeepsReadsAndRecoversByItself: a member filled
// to its quota refuses creates, updates and transactions with
// store.ErrNoSpace and etcd's own message, still serves reads and deletes,
// and once the filler is deleted the space keeper compacts, defragments and
// disarms NOSPACE, so writes succeed again without anyone stepping in.
//
// Serial: its final size check depends on how the filler's deletes interleave
// with the keeper's turns, and with other members fsyncing beside it the
// keeper disarmed so early that later deletes grew the file back past 90%.
func TestNoSpaceRefusesWritesKeepsReadsAndRecoversByItself(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// DisarmBelow well under what the filler keeps live, so a turn before
	// the deletes cannot disarm however many free pages it gives back.
	s := openTinyMember(t, etcd.SpacePolicy{Interval: 50 * time.Millisecond, MinReclaim: 1 << 40, Ratio: 2, DisarmBelow: 0.5})
	keep, err := s.Create(ctx, "/registry/configmaps/default/keep", []byte("kept"))
	if err != nil {
		t.Fatal(err)
	}

	value := make([]byte, 64<<10)
	var filler []string
	var full error
	for i := 0; full == nil; i++ {
		if i > 4*spaceQuota/len(value) {
			t.Fatalf("no NOSPACE after %d writes of %d bytes into a %d-byte quota", i, len(value), spaceQuota)
		}
		key := fmt.Sprintf("/registry/configmaps/default/fill-%04d", i)
		if _, full = s.Create(ctx, key, value); full == nil {
			filler = append(filler, key)
		}
	}
	if !errors.Is(full, store.ErrNoSpace) || !strings.Contains(full.Error(), "etcdserver: mvcc: database space exceeded") {
		t.Fatalf("write into a full store = %v, want ErrNoSpace with etcd's message", full)
	}
	if alarmed, err := etcd.NoSpaceAlarmed(ctx, s); err != nil || !alarmed {
		t.Fatalf("NOSPACE alarm raised: %v, %v", alarmed, err)
	}
	// Small writes are refused too: the alarm, not the size, decides.
	if _, err := s.Update(ctx, "/registry/configmaps/default/keep", keep, []byte("x")); !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("update while full = %v, want ErrNoSpace", err)
	}
	if _, err := s.Txn(ctx, []store.Op{{Key: "/registry/configmaps/default/new", Value: []byte("x")}}); !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("txn while full = %v, want ErrNoSpace", err)
	}
	if kv, err := s.Get(ctx, "/registry/configmaps/default/keep"); err != nil || string(kv.Value) != "kept" {
		t.Fatalf("read while full: %q %v", kv.Value, err)
	}
	if list, err := s.List(ctx, "/registry/configmaps/", store.ListOptions{Limit: 10}); err != nil || len(list.KVs) != 10 {
		t.Fatalf("list while full: %d items, %v", len(list.KVs), err)
	}
	// Still full a while later: the keeper must not disarm while there is
	// nothing to reclaim (it has had dozens of turns by then).
	time.Sleep(500 * time.Millisecond)
	if _, err := s.Create(ctx, "/registry/configmaps/default/early", []byte("x")); !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("write before anything was deleted = %v, want ErrNoSpace", err)
	}

	fullSize, _, err := etcd.DBSize(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range filler {
		if _, err := s.Delete(ctx, key, 0); err != nil {
			t.Fatalf("delete while full: %v", err)
		}
	}
	start := time.Now()
	wait.UntilCtx(t, 30*time.Second, "the space keeper to disarm NOSPACE after the filler was deleted", func(ctx context.Context) error {
		_, err := s.Create(ctx, "/registry/configmaps/default/after", []byte("x"))
		if err != nil && !errors.Is(err, store.ErrNoSpace) {
			t.Fatalf("write after deleting: %v", err)
		}
		return err
	})
	t.Logf("writes accepted again %s after the filler was deleted", time.Since(start))
	// The keeper disarmed below half the quota; the write above may
	// have grown the file a little since, but it stays below the full size.
	size, _, err := etcd.DBSize(ctx, s)
	if err != nil || size >= fullSize {
		t.Fatalf("database size after recovery %d, full it was %d (quota %d): %v", size, fullSize, spaceQuota, err)
	}
	if kv, err := s.Get(ctx, "/registry/configmaps/default/keep"); err != nil || string(kv.Value) != "kept" {
		t.Fatalf("data kept across the recovery: %q %v", kv.Value, err)
	}
}

// TestSpaceKeeperDefragmentsAMostlyFreeFile: after a mass deletion and a
// compaction, the keeper shrinks the file without any alarm.
func TestSpaceKeeperDefragmentsAMostlyFreeFile(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := openTinyMember(t, etcd.SpacePolicy{Interval: 50 * time.Millisecond, MinReclaim: 1 << 20, Ratio: 2, DisarmBelow: 0.9})
	value := make([]byte, 64<<10)
	for i := range 40 { // ~2.5 MiB, well under the quota
		key := fmt.Sprintf("/registry/secrets/default/s-%02d", i)
		if _, err := s.Create(ctx, key, value); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, key, 0); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	grown, _, err := etcd.DBSize(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	// The cluster keeps writing (leases, status), as a live one does: bbolt
	// counts the pages compaction freed as free only after a later write.
	beat, err := s.Create(ctx, "/registry/leases/kube-node-lease/n", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	wait.UntilCtx(t, 30*time.Second, fmt.Sprintf("the space keeper to defragment the %d-byte file", grown), func(ctx context.Context) error {
		next, err := s.Update(ctx, "/registry/leases/kube-node-lease/n", beat, []byte("1"))
		if err != nil {
			return err
		}
		beat = next
		size, inUse, err := etcd.DBSize(ctx, s)
		if err != nil {
			return err
		}
		if size >= grown || size-inUse >= 1<<20 {
			return fmt.Errorf("%d bytes, %d in use", size, inUse)
		}
		t.Logf("defragmented from %d to %d bytes (%d in use)", grown, size, inUse)
		return nil
	})
}

func TestEmbeddedRefusesBadSpaceOptions(t *testing.T) {
	t.Parallel()
	for _, opt := range []etcd.EmbeddedOption{etcd.WithQuotaBackendBytes(0), etcd.WithSpacePolicy(etcd.SpacePolicy{})} {
		if s, err := etcd.Embedded(context.Background(), t.TempDir(), nil, opt); err == nil {
			s.Close()
			t.Error("a zero quota or check interval was accepted")
		}
	}
}
