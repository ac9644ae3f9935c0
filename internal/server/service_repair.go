package server

import (
	"context"
	"fmt"
	"time"

	ipallocatorcontroller "k8s.io/kubernetes/pkg/registry/core/service/ipallocator/controller"
	portallocatorcontroller "k8s.io/kubernetes/pkg/registry/core/service/portallocator/controller"

	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/pki"
)

// serviceRepairInterval is how often kube-apiserver's repair loops check
// the service bitmaps against the Services (its repairLoopInterval).
const serviceRepairInterval = 3 * time.Minute

// startServiceRepair runs upstream's cluster IP and node port repair
// controllers on the stored bitmaps, as kube-apiserver does in every
// replica (their writes are compare-and-swap, so replicas do not race): they
// release what no Service holds, after it has looked leaked for several
// runs, and record what Services hold that the bitmap lacks. The returned
// wait blocks until both have stopped after ctx ends.
func startServiceRepair(ctx context.Context, lb *inprocess.Loopback, allocs *apiserver.ServiceAllocations) (wait func(), err error) {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("service repair: %w", err)
	}
	ips := ipallocatorcontroller.NewRepair(serviceRepairInterval, client.CoreV1(), client.EventsV1(), allocs.ClusterIPRange, allocs.ClusterIPs, nil, nil)
	ports := portallocatorcontroller.NewRepair(serviceRepairInterval, client.CoreV1(), client.EventsV1(), allocs.NodePortRange, allocs.NodePorts)
	stop := make(chan struct{})
	done := make(chan struct{}, 2)
	for _, repair := range []func(func(), chan struct{}){ips.RunUntil, ports.RunUntil} {
		go func() {
			defer func() { done <- struct{}{} }()
			repair(func() {}, stop)
		}()
	}
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	return func() { <-done; <-done }, nil
}

// serviceLoops are the API server's own Service loops, which every replica
// runs: the kubernetes Service, the allocation repair, the default
// ServiceCIDR and, when on, cluster DNS.
type serviceLoops struct {
	kubernetes  *kubernetesService
	allocations *apiserver.ServiceAllocations
	dns         *clusterDNS // nil: cluster DNS is off
}

func (s *serviceLoops) start(ctx context.Context, lb *inprocess.Loopback) (wait func(), err error) {
	waitKubernetes, err := s.kubernetes.start(ctx, lb)
	if err != nil {
		return nil, err
	}
	waitRepair, err := startServiceRepair(ctx, lb, s.allocations)
	if err != nil {
		return nil, err
	}
	waitCIDR, err := startDefaultServiceCIDR(ctx, lb, s.allocations.ClusterIPRange)
	if err != nil {
		return nil, err
	}
	waitDNS := func() {}
	if s.dns != nil {
		if waitDNS, err = s.dns.start(ctx, lb); err != nil {
			return nil, err
		}
	}
	return func() { waitKubernetes(); waitRepair(); waitCIDR(); waitDNS() }, nil
}
