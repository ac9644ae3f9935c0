package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Expiring keys are attached to etcd leases, which etcd revokes (deleting
// the keys, with watch events) when they run out. A lease per write would
// cost a lease grant per event and leave etcd tracking one lease per event,
// so writes share one lease for a while, as kube-apiserver's do: a lease
// granted for ttl plus a reuse window serves every write that comes within
// that window and needs ttl, up to maxKeysPerLease keys.
const (
	// leaseReuseFraction and maxLeaseReuse bound the reuse window: 5% of
	// the ttl, at most a minute (kube-apiserver's defaults).
	leaseReuseFraction = 0.05
	maxLeaseReuse      = time.Minute
	maxKeysPerLease    = 1000
)

// leases hands out shared leases. Its zero value is ready; the clock is
// the caller's, so that tests can drive it.
type leases struct {
	mu      sync.Mutex
	current clientv3.LeaseID
	// expires is when current runs out; keys is how many writes it served.
	expires time.Time
	keys    int
}

// leaseGranter is the part of etcd's lease API that leases needs.
type leaseGranter interface {
	Grant(ctx context.Context, ttlSeconds int64) (*clientv3.LeaseGrantResponse, error)
}

// get returns a lease that outlives now+ttl by at most the reuse window.
func (l *leases) get(ctx context.Context, granter leaseGranter, now time.Time, ttl time.Duration) (clientv3.LeaseID, error) {
	reuse := min(time.Duration(float64(ttl)*leaseReuseFraction), maxLeaseReuse)
	l.mu.Lock()
	defer l.mu.Unlock()
	// The lease must outlive ttl, and not by more than the reuse window
	// (and the second etcd rounds the grant up to).
	lasts := !now.Add(ttl).After(l.expires)
	notTooLong := !now.Add(ttl + reuse + time.Second).Before(l.expires)
	if l.current != 0 && lasts && notTooLong && l.keys < maxKeysPerLease {
		l.keys++
		return l.current, nil
	}
	// etcd counts leases in whole seconds; round up so no key expires early.
	seconds := int64((ttl + reuse + time.Second - 1) / time.Second)
	resp, err := granter.Grant(ctx, seconds)
	if err != nil {
		return 0, err
	}
	l.current, l.expires, l.keys = resp.ID, now.Add(time.Duration(seconds)*time.Second), 1
	return l.current, nil
}

// forget drops lease if it is the shared one: etcd no longer has it.
func (l *leases) forget(lease clientv3.LeaseID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current == lease {
		l.current = 0
	}
}

// CreateExpiring writes key only if it does not exist, to expire ttl later.
func (s *Store) CreateExpiring(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	return s.withLease(ctx, key, ttl, func(lease clientv3.LeaseID) (int64, error) {
		return s.create(ctx, key, value, clientv3.WithLease(lease))
	})
}

// UpdateExpiring writes key if its ModRevision still equals expected; the
// key then expires ttl after this write.
func (s *Store) UpdateExpiring(ctx context.Context, key string, expected int64, value []byte, ttl time.Duration) (int64, error) {
	if expected <= 0 {
		return 0, fmt.Errorf("store update %q: needs a positive expected revision, got %d", key, expected)
	}
	return s.withLease(ctx, key, ttl, func(lease clientv3.LeaseID) (int64, error) {
		return s.guarded(ctx, "update", key, clientv3.Compare(clientv3.ModRevision(key), "=", expected),
			clientv3.OpPut(key, string(value), clientv3.WithLease(lease)))
	})
}

// withLease runs write with a shared lease for ttl, and once more with a
// fresh one if etcd no longer knows the shared lease (revoked by hand, or
// lost with a cluster restored from a snapshot).
func (s *Store) withLease(ctx context.Context, key string, ttl time.Duration, write func(clientv3.LeaseID) (int64, error)) (int64, error) {
	if key == "" || ttl <= 0 {
		return 0, fmt.Errorf("store expiring write %q: needs a key and a positive ttl, got %s", key, ttl)
	}
	for attempt := 0; ; attempt++ {
		lease, err := s.leases.get(ctx, s.client, time.Now(), ttl)
		if err != nil {
			return 0, fmt.Errorf("store expiring write %q: lease for %s: %w", key, ttl, mapErr(err))
		}
		rev, err := write(lease)
		if attempt == 0 && errors.Is(err, rpctypes.ErrLeaseNotFound) {
			s.leases.forget(lease)
			continue
		}
		return rev, err
	}
}
