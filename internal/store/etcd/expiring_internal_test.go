package etcd

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// countingGranter grants leases with increasing IDs and remembers their TTLs.
type countingGranter struct{ ttls []int64 }

func (g *countingGranter) Grant(_ context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	g.ttls = append(g.ttls, ttl)
	return &clientv3.LeaseGrantResponse{ID: clientv3.LeaseID(len(g.ttls)), TTL: ttl}, nil
}

func TestLeasesAreSharedWithinTheReuseWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var l leases
	g := &countingGranter{}
	start := time.Unix(1000, 0)
	get := func(at time.Duration, ttl time.Duration) clientv3.LeaseID {
		t.Helper()
		id, err := l.get(ctx, g, start.Add(at), ttl)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := get(0, time.Hour)
	if len(g.ttls) != 1 || g.ttls[0] != 3660 {
		t.Fatalf("granted %v, want one lease of 3660 s (an hour and the minute's reuse window)", g.ttls)
	}
	if id := get(59*time.Second, time.Hour); id != first {
		t.Errorf("a write 59 s later got lease %d, want the shared %d", id, first)
	}
	second := get(61*time.Second, time.Hour)
	if second == first {
		t.Error("a write past the reuse window shared a lease that expires before its ttl")
	}
	if id := get(61*time.Second, 2*time.Hour); id == second {
		t.Error("a write with a longer ttl shared a lease that expires too soon")
	}
	third := get(62*time.Second, time.Minute)
	if third == second || g.ttls[len(g.ttls)-1] != 63 {
		t.Errorf("a one-minute ttl shared an hour's lease, or was granted %d s (want 63: 3 s of reuse)", g.ttls[len(g.ttls)-1])
	}
}

func TestALeaseServesAtMostMaxKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var l leases
	g := &countingGranter{}
	now := time.Unix(1000, 0)
	for range maxKeysPerLease + 1 {
		if _, err := l.get(ctx, g, now, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.ttls) != 2 {
		t.Fatalf("%d keys took %d leases, want 2", maxKeysPerLease+1, len(g.ttls))
	}
}
