// Package endpoints runs upstream's Endpoints, EndpointSlice and
// EndpointSlice mirroring controllers (k8s.io/kubernetes/pkg/controller/
// endpoint, endpointslice, endpointslicemirroring) with the settings
// kube-controller-manager v1.37 gives them by default, over one set of
// client-go informers. Only the wiring is berth's: which Endpoints and
// EndpointSlices a Service's ready pods make is upstream's code.
package endpoints

import (
	"context"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/endpoint"
	"k8s.io/kubernetes/pkg/controller/endpointslice"
	"k8s.io/kubernetes/pkg/controller/endpointslicemirroring"

	"github.com/berth/berth/internal/informeropts"
)

// kube-controller-manager's defaults (--concurrent-endpoint-syncs,
// --concurrent-service-endpoint-syncs, --max-endpoints-per-slice,
// --mirroring-concurrent-service-endpoint-syncs,
// --mirroring-max-endpoints-per-subset; batch periods 0).
const (
	workers               = 5
	maxEndpointsPerSlice  = 100
	maxEndpointsPerSubset = 1000
)

// Config is what the controllers need.
type Config = informeropts.ControllerConfig

// Run runs the three controllers until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	// Upstream's controllers log through klog's contextual logger.
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("endpoints"))
	factory := cfg.NewFactory()
	pods, services, nodes := factory.Core().V1().Pods(), factory.Core().V1().Services(), factory.Core().V1().Nodes()
	endpoints, slices := factory.Core().V1().Endpoints(), factory.Discovery().V1().EndpointSlices()

	clients, err := cfg.ClientsFor("endpoint-controller", "endpointslice-controller", "endpointslicemirroring-controller")
	if err != nil {
		return err
	}
	eps := endpoint.NewEndpointController(ctx, pods, services, endpoints, clients[0], 0)
	sl := endpointslice.NewController(ctx, pods, services, nodes, slices, maxEndpointsPerSlice, clients[1], 0)
	mirror := endpointslicemirroring.NewController(ctx, endpoints, slices, services, maxEndpointsPerSubset, clients[2], 0)

	return informeropts.RunControllers(ctx, factory, cfg.Logger,
		informeropts.Workers(eps.Run, workers), informeropts.Workers(sl.Run, workers), informeropts.Workers(mirror.Run, workers))
}
