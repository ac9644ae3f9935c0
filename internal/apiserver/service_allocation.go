package apiserver

import (
	"context"
	"fmt"
	"net"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/rangeallocation"
	"k8s.io/kubernetes/pkg/registry/core/service/ipallocator"
	"k8s.io/kubernetes/pkg/registry/core/service/portallocator"
	svcstorage "k8s.io/kubernetes/pkg/registry/core/service/storage"
	netutils "k8s.io/utils/net"
)

// The stored bitmaps, at kube-apiserver's keys.
const (
	serviceIPsKey       = "/registry/ranges/serviceips"
	serviceNodePortsKey = "/registry/ranges/servicenodeports"
)

// The ranges a Config that names none allocates from:
// --service-cluster-ip-range as kubeadm sets it, --service-node-port-range
// as kube-apiserver's default.
const (
	defaultServiceClusterIPRange = "10.96.0.0/12"
	defaultServiceNodePortRange  = "30000-32767"
)

// newServiceAllocation gives Services kube-apiserver's cluster IP and node
// port allocation: upstream's service REST (pkg/registry/core/service/
// storage.NewREST) is built for its store hooks only (BeginCreate,
// BeginUpdate, AfterDelete), which normalize the IP fields, default the IP
// family policy, allocate, and return a transaction that the write commits
// or reverts. Its own generic store is never used (berth's objectStore
// stores the Service), so it gets no storage. The allocators are upstream's
// bitmaps (ipallocator.New, portallocator.New) kept in berth's store
// (storedRange).
func newServiceAllocation(_ context.Context, cfg *Config) (*writeHooks, error) {
	cidr := cfg.ServiceClusterIPRange
	family := api.IPv4Protocol
	if netutils.IsIPv6CIDR(cidr) {
		family = api.IPv6Protocol
	}
	var ipBitmap, portBitmap *storedRange
	ips, err := ipallocator.New(cidr, storedRangeFactory(cfg.Store, serviceIPsKey, api.Resource("serviceipallocations"), &ipBitmap))
	if err != nil {
		return nil, fmt.Errorf("service cluster IP range %s: %w", cidr, err)
	}
	ports, err := portallocator.New(cfg.ServiceNodePortRange, storedRangeFactory(cfg.Store, serviceNodePortsKey, api.Resource("servicenodeportallocations"), &portBitmap))
	if err != nil {
		return nil, fmt.Errorf("service node port range %s: %w", cfg.ServiceNodePortRange.String(), err)
	}
	rest, _, _, err := svcstorage.NewREST(withoutStorage, family, map[api.IPFamily]ipallocator.Interface{family: ips}, ports, nil, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("upstream service registry: %w", err)
	}
	if cfg.ServiceAllocations != nil {
		*cfg.ServiceAllocations = ServiceAllocations{ClusterIPRange: cidr, ClusterIPs: ipBitmap, NodePortRange: cfg.ServiceNodePortRange, NodePorts: portBitmap}
	}
	hooks := rest.Store
	return &writeHooks{
		beginCreate: func(ctx context.Context, obj runtime.Object, options *metav1.CreateOptions) (func(bool), error) {
			svc := internalService(obj)
			finish, err := hooks.BeginCreate(ctx, svc, options)
			if err != nil {
				return nil, err
			}
			fromInternal(svc, obj)
			return func(success bool) { finish(ctx, success) }, nil
		},
		beginUpdate: func(ctx context.Context, obj, old runtime.Object, options *metav1.UpdateOptions) (func(bool), error) {
			svc := internalService(obj)
			finish, err := hooks.BeginUpdate(ctx, svc, internalService(old), options)
			if err != nil {
				return nil, err
			}
			fromInternal(svc, obj)
			return func(success bool) { finish(ctx, success) }, nil
		},
		afterDelete: func(obj runtime.Object, options *metav1.DeleteOptions) {
			hooks.AfterDelete(internalService(obj), options)
		},
	}, nil
}

// ServiceAllocations are the stored bitmaps Services allocate from, for
// upstream's repair controllers (ipallocator/controller and
// portallocator/controller), which release what no Service holds (a create
// that died between allocating and storing) and re-record what Services
// hold (a bitmap lost, or a range changed).
type ServiceAllocations struct {
	ClusterIPRange *net.IPNet
	ClusterIPs     rangeallocation.RangeRegistry
	NodePortRange  utilnet.PortRange
	NodePorts      rangeallocation.RangeRegistry
}

// internalService is obj, a v1 Service, defaulted as upstream's decoding
// defaults it (the hooks run before the strategy, which defaults again) and
// converted to the internal form upstream's hooks take.
func internalService(obj runtime.Object) *api.Service {
	legacyscheme.Scheme.Default(obj)
	svc := &api.Service{}
	if err := legacyscheme.Scheme.Convert(obj, svc, nil); err != nil {
		panic(err) // generated conversions of a registered pair do not fail
	}
	return svc
}

// withoutStorage completes upstream's service store with no storage behind
// it: berth uses only its hooks.
var withoutStorage = generic.RESTOptions{
	StorageConfig:  &storagebackend.ConfigForResource{GroupResource: api.Resource("services")},
	ResourcePrefix: "services",
	Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object,
		func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		return nil, func() {}, nil
	},
}

// ParseServiceRanges parses --service-cluster-ip-range and
// --service-node-port-range; empty strings give the defaults.
func ParseServiceRanges(clusterIPRange, nodePortRange string) (*net.IPNet, utilnet.PortRange, error) {
	if clusterIPRange == "" {
		clusterIPRange = defaultServiceClusterIPRange
	}
	if nodePortRange == "" {
		nodePortRange = defaultServiceNodePortRange
	}
	_, cidr, err := netutils.ParseCIDRSloppy(clusterIPRange)
	if err != nil {
		return nil, utilnet.PortRange{}, fmt.Errorf("--service-cluster-ip-range %q: %w", clusterIPRange, err)
	}
	ports, err := utilnet.ParsePortRange(nodePortRange)
	if err != nil {
		return nil, utilnet.PortRange{}, fmt.Errorf("--service-node-port-range %q: %w", nodePortRange, err)
	}
	return cidr, *ports, nil
}
