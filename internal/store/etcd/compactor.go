package etcd

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/utils/clock"
)

// compactor is what the store keeps of kube-apiserver's compactor.
type compactor interface {
	CompactRevision() int64
	Stop()
}

// RunCompactor runs kube-apiserver's own compactor (k8s.io/apiserver's
// etcd3 compactor) until ctx ends: every interval it compacts to the
// revision it saw one interval before, so one to two intervals of history
// stay, and servers sharing a cluster take turns through etcd's
// compact_rev_key as kube-apiserver instances do.
func (s *Store) RunCompactor(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("compactor: interval %s must be positive", interval)
	}
	var c compactor = etcd3.NewCompactor(s.client, interval, clock.RealClock{}, nil)
	s.compactor.Store(&c)
	<-ctx.Done()
	c.Stop()
	return nil
}

// CompactedRevision is the newest revision the compactor knows history
// was compacted to (0: none yet, or no compactor runs): reads at older
// revisions fail as compacted.
func (s *Store) CompactedRevision() int64 {
	c := s.compactor.Load()
	if c == nil {
		return 0
	}
	return (*c).CompactRevision()
}
