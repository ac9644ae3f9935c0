package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berth/berth/internal/store"
)

// RunCompactor compacts the store every interval, keeping the newest keep
// revisions of history (what watchers can resume from), until ctx ends.
// Several servers sharing one cluster may each run it: a compaction another
// server already went past is ignored.
func (s *Store) RunCompactor(ctx context.Context, interval time.Duration, keep int64) error {
	if interval <= 0 || keep < 1 {
		return fmt.Errorf("compactor: interval %s and keep %d must be positive", interval, keep)
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var compacted int64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		next, err := s.compactOnce(ctx, compacted, keep)
		if err != nil && ctx.Err() == nil {
			s.logger.Warn("compaction failed", "err", err)
			continue
		}
		compacted = next
	}
}

// compactOnce compacts to current-keep if that is past the last compaction.
func (s *Store) compactOnce(ctx context.Context, compacted, keep int64) (int64, error) {
	current, err := s.CurrentRevision(ctx)
	if err != nil {
		return compacted, err
	}
	target := current - keep
	if target <= compacted {
		return compacted, nil
	}
	if err := s.Compact(ctx, target); err != nil && !errors.Is(err, store.ErrCompacted) {
		return compacted, err
	}
	s.logger.Debug("compacted", "revision", target)
	return target, nil
}
