package apiserver

import (
	"context"
	"net"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/service/ipallocator"
	ipallocatorcontroller "k8s.io/kubernetes/pkg/registry/core/service/ipallocator/controller"

	"github.com/berth/berth/internal/testkit/wait"
)

// TestServiceRepairKeepsTheStoredBitmapTrue runs upstream's cluster IP
// repair controller on the bitmap berth stores (ServiceAllocations): an IP
// the bitmap lost is recorded again from the Service that holds it, and an
// IP no Service holds (a create that died between allocating and storing)
// is released after upstream's three sightings.
func TestServiceRepairKeepsTheStoredBitmapTrue(t *testing.T) {
	allocs := &ServiceAllocations{}
	s := newTestServerWith(t, func(c *Config) { c.ServiceAllocations = allocs })
	ctx := testContext(t)
	svcs := s.client.CoreV1().Services("default")
	if _, err := svcs.Create(ctx, clusterIPService("held", "10.96.0.20"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The bitmap is lost; in its place, one that holds only a leak.
	snapshot, err := allocs.ClusterIPs.Get()
	if err != nil {
		t.Fatal(err)
	}
	leaky, err := ipallocator.NewInMemory(allocs.ClusterIPRange)
	if err != nil {
		t.Fatal(err)
	}
	if err := leaky.Allocate(net.ParseIP("10.96.0.21")); err != nil {
		t.Fatal(err)
	}
	replaced := &api.RangeAllocation{}
	if err := leaky.Snapshot(replaced); err != nil {
		t.Fatal(err)
	}
	replaced.ResourceVersion = snapshot.ResourceVersion
	if err := allocs.ClusterIPs.CreateOrUpdate(replaced); err != nil {
		t.Fatalf("CreateOrUpdate: %v", err)
	}
	stale := replaced.DeepCopy() // its resourceVersion is no longer current
	if err := allocs.ClusterIPs.CreateOrUpdate(stale); err == nil {
		t.Fatal("CreateOrUpdate at a stale resourceVersion succeeded")
	}
	_, err = svcs.Create(ctx, clusterIPService("leak", "10.96.0.21"), metav1.CreateOptions{})
	wantInvalid(t, err, "spec.clusterIPs", "provided IP is already allocated")

	repair := ipallocatorcontroller.NewRepair(50*time.Millisecond, s.client.CoreV1(), s.client.EventsV1(), allocs.ClusterIPRange, allocs.ClusterIPs, nil, nil)
	stop := make(chan struct{})
	defer close(stop)
	go repair.RunUntil(func() {}, stop)

	wait.UntilCtx(t, 30*time.Second, "the repair to record 10.96.0.20 and release 10.96.0.21", func(ctx context.Context) error {
		if _, err := svcs.Create(ctx, clusterIPService("leak", "10.96.0.21"), metav1.CreateOptions{}); err != nil {
			return err
		}
		return nil
	})
	// By then the repair has run at least three times: the held IP is recorded.
	_, err = svcs.Create(ctx, clusterIPService("squatter", "10.96.0.20"), metav1.CreateOptions{})
	wantInvalid(t, err, "spec.clusterIPs", "provided IP is already allocated")
}
