package server

import (
	"context"
	"slices"
	"testing"
	"time"

	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestStoreLeasesListEveryLiveReplica drives the lease endpoint
// reconciler's Leases over a real embedded etcd as two replicas would: both
// addresses are listed while their leases are renewed, a removed one is
// gone at once, and one whose replica stopped renewing expires.
func TestStoreLeasesListEveryLiveReplica(t *testing.T) {
	t.Parallel()
	st := etcdtest.New(t)
	leases := &storeLeases{store: st, expiring: st, ttl: 2 * time.Second}
	for _, ip := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.1"} { // the second update renews
		if err := leases.UpdateLease(ip); err != nil {
			t.Fatalf("UpdateLease(%s): %v", ip, err)
		}
	}
	got, err := leases.ListLeases()
	if err != nil || !slices.Equal(got, []string{"198.51.100.1", "198.51.100.2"}) {
		t.Fatalf("ListLeases = %v, %v; want both replicas", got, err)
	}
	if err := leases.RemoveLease("198.51.100.1"); err != nil {
		t.Fatalf("RemoveLease: %v", err)
	}
	if err := leases.RemoveLease("198.51.100.1"); !apistorage.IsNotFound(err) {
		t.Fatalf("removing a missing lease: %v, want upstream's NotFound", err)
	}
	if got, err := leases.ListLeases(); err != nil || !slices.Equal(got, []string{"198.51.100.2"}) {
		t.Fatalf("after RemoveLease: %v, %v", got, err)
	}
	wait.UntilTrue(t, 30*time.Second, "the unrenewed lease to expire", func(context.Context) (bool, error) {
		got, err := leases.ListLeases()
		return len(got) == 0, err
	})
}
