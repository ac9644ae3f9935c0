package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/berth/berth/internal/store"
)

// TestOneKeeperTurnRecoversAfterDeletes: with NOSPACE raised and the
// filler deleted, a single turn of the keeper (here never ticking on its
// own) compacts, defragments and disarms: the recovery does not depend on
// deletes racing with earlier turns. A turn with nothing deleted since the
// last failed one does not defragment again.
func TestOneKeeperTurnRecoversAfterDeletes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const quota = 8 << 20
	// DisarmBelow well under what the filler keeps live: a defragmentation
	// that gives back the write path's free pages (how many varies by run)
	// still leaves the file above it, so the first turn cannot disarm.
	policy := SpacePolicy{Interval: time.Hour, MinReclaim: 64 << 20, Ratio: 2, DisarmBelow: 0.5}
	s, err := Embedded(ctx, t.TempDir(), slog.New(slog.DiscardHandler), WithQuotaBackendBytes(quota), WithSpacePolicy(policy))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var filler []string
	for i := 0; ; i++ {
		key := fmt.Sprintf("/registry/secrets/default/s-%04d", i)
		_, err := s.Create(ctx, key, make([]byte, 64<<10))
		if errors.Is(err, store.ErrNoSpace) {
			break
		}
		if err != nil || i > 1000 {
			t.Fatalf("filling: %d writes, %v", i, err)
		}
		filler = append(filler, key)
	}
	k := &spaceKeeper{s: s, policy: policy, quota: quota}
	if err := k.check(ctx); err != nil {
		t.Fatal(err)
	}
	if k.triedAt == 0 {
		t.Fatal("a turn with nothing deleted did not record its failed attempt")
	}
	for _, key := range filler {
		if _, err := s.Delete(ctx, key, 0); err != nil {
			t.Fatalf("delete while full: %v", err)
		}
	}
	if err := k.check(ctx); err != nil {
		t.Fatal(err)
	}
	if alarms, err := s.noSpaceAlarms(ctx); err != nil || len(alarms) != 0 {
		t.Fatalf("after one turn: alarms %v, %v", alarms, err)
	}
	if _, err := s.Create(ctx, "/registry/secrets/default/after", []byte("x")); err != nil {
		t.Fatalf("write after recovery: %v", err)
	}
}
