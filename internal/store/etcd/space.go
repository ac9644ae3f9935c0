package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berth/berth/internal/store"
)

// SpacePolicy is when the embedded member's disk space is reclaimed.
//
// etcd never shrinks its database file by itself: deleted keys and
// compacted history leave free pages that only a defragmentation returns,
// and once the file reaches the backend quota etcd raises the NOSPACE
// alarm and refuses every write (reads and deletes go on) until an
// operator disarms it. For the embedded member berth is that operator,
// doing what etcd's operations guide asks: compact, defragment, disarm.
type SpacePolicy struct {
	// Interval is how often the member's size and alarms are checked; a
	// check is two in-process calls, a defragmentation happens only when
	// one of the rules below holds.
	Interval time.Duration
	// MinReclaim and Ratio: defragment when the file holds at least
	// MinReclaim free bytes and is at least Ratio times what is in use.
	// Defragmentation rewrites the file and blocks the member's reads and
	// writes meanwhile (about 3 s for 100k live 1 KiB keys, a 130 MiB file,
	// on a shared 2-core machine: BenchmarkDefragment100kKeys), so it runs
	// only when it gives back a lot, as after a mass deletion.
	MinReclaim int64
	Ratio      float64
	// DisarmBelow is the share of the quota the file must be under, after
	// compaction and defragmentation, for NOSPACE to be disarmed; the
	// headroom keeps the next few writes from raising it again at once.
	DisarmBelow float64
}

// DefaultSpacePolicy checks every minute and defragments when 64 MiB and
// half the file are free.
var DefaultSpacePolicy = SpacePolicy{Interval: time.Minute, MinReclaim: 64 << 20, Ratio: 2, DisarmBelow: 0.9}

// spaceKeeper applies a SpacePolicy to the embedded member.
type spaceKeeper struct {
	s      *Store
	policy SpacePolicy
	quota  int64
	// triedAt is the revision of the last recovery attempt that could not
	// disarm: while NOSPACE refuses writes, only deletes move the revision,
	// and without one another defragmentation would only block the API.
	triedAt int64
}

// run checks every policy interval until ctx ends.
func (k *spaceKeeper) run(ctx context.Context) {
	ticker := time.NewTicker(k.policy.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if err := k.check(ctx); err != nil && ctx.Err() == nil {
			k.s.logger.Warn("reclaiming etcd space failed", "err", err)
		}
	}
}

// check is one turn: with NOSPACE raised, try to recover; otherwise
// defragment when the policy says the file is mostly free.
func (k *spaceKeeper) check(ctx context.Context) error {
	alarms, err := k.s.noSpaceAlarms(ctx)
	if err != nil {
		return err
	}
	if len(alarms) > 0 {
		return k.recover(ctx, alarms)
	}
	k.triedAt = 0
	st, err := k.s.client.Status(ctx, "")
	if err != nil {
		return fmt.Errorf("etcd status: %w", err)
	}
	free := st.DbSize - st.DbSizeInUse
	if free < k.policy.MinReclaim || float64(st.DbSize) < k.policy.Ratio*float64(st.DbSizeInUse) {
		return nil
	}
	_, err = k.s.defragment(ctx)
	return err
}

// recover compacts to the current revision (watchers behind it get 410
// Gone and re-list, as after any compaction), defragments, and disarms
// NOSPACE once the file is below DisarmBelow of the quota.
func (k *spaceKeeper) recover(ctx context.Context, alarms []*pb.AlarmMember) error {
	current, err := k.s.CurrentRevision(ctx)
	if err != nil {
		return err
	}
	if current == k.triedAt {
		return nil // nothing deleted since the last attempt
	}
	// Physical: the defragmentation below must see the compacted pages
	// gone, or this attempt fails and the revision, which compaction does
	// not move, would hold back the next.
	if _, err := k.s.client.Compact(ctx, current, clientv3.WithCompactPhysical()); err != nil && !errors.Is(mapErr(err), store.ErrCompacted) {
		return fmt.Errorf("compact to %d: %w", current, mapErr(err))
	}
	size, err := k.s.defragment(ctx)
	if err != nil {
		return err
	}
	if float64(size) >= k.policy.DisarmBelow*float64(k.quota) {
		k.triedAt = current
		k.s.logger.Error("etcd database is full: writes are refused until objects are deleted",
			"dbSize", size, "quota", k.quota, "fix", "delete objects (events, old ReplicaSets, unused ConfigMaps/Secrets); berth then compacts, defragments and accepts writes again by itself")
		return nil
	}
	for _, a := range alarms {
		// Each alarm names its member: a request without the ID matches none.
		if _, err := k.s.client.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: a.Alarm}); err != nil {
			return fmt.Errorf("disarm NOSPACE: %w", err)
		}
	}
	k.triedAt = 0
	k.s.logger.Warn("etcd database space reclaimed: NOSPACE disarmed, writes accepted again", "dbSize", size, "quota", k.quota)
	return nil
}

// noSpaceAlarms lists the raised NOSPACE alarms.
func (s *Store) noSpaceAlarms(ctx context.Context) ([]*pb.AlarmMember, error) {
	resp, err := s.client.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd alarms: %w", err)
	}
	var out []*pb.AlarmMember
	for _, a := range resp.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			out = append(out, a)
		}
	}
	return out, nil
}

// defragment rewrites the member's database file without its free pages
// and returns the file's new size. It calls the member directly: the
// in-process client's Maintenance.Defragment dereferences a health
// notifier that v3client never sets (etcd v3.7.0).
func (s *Store) defragment(ctx context.Context) (int64, error) {
	before, err := s.client.Status(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("etcd status: %w", err)
	}
	start := time.Now()
	if err := s.defragmentMember(); err != nil {
		return 0, fmt.Errorf("defragment: %w", err)
	}
	took := time.Since(start)
	after, err := s.client.Status(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("etcd status: %w", err)
	}
	s.logger.Info("etcd defragmented", "took", took, "dbSizeBefore", before.DbSize, "dbSizeAfter", after.DbSize, "inUse", after.DbSizeInUse)
	return after.DbSize, nil
}
