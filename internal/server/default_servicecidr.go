package server

import (
	"context"
	"fmt"
	"net"
	"sync"

	"k8s.io/kubernetes/pkg/controlplane/controller/defaultservicecidr"

	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/pki"
)

// startDefaultServiceCIDR runs kube-apiserver's default ServiceCIDR
// controller: the "kubernetes" ServiceCIDR names the service range, is
// recreated when deleted, and says Ready, so clients that read the
// cluster's service ranges from the API (and the conformance suite) find
// it. The returned wait blocks until the controller's start has returned;
// the loops it leaves running end with ctx (upstream's controller offers
// no way to join them).
func startDefaultServiceCIDR(ctx context.Context, lb *inprocess.Loopback, serviceRange *net.IPNet) (wait func(), err error) {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("default service CIDR: %w", err)
	}
	ctrl := defaultservicecidr.NewController(*serviceRange, net.IPNet{}, client)
	var started sync.WaitGroup
	started.Go(func() { ctrl.Start(ctx) })
	return started.Wait, nil
}
