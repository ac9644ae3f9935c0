package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/controlplane/controller/kubernetesservice"
	"k8s.io/kubernetes/pkg/controlplane/reconcilers"
	netutils "k8s.io/utils/net"

	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/store"
)

// kube-apiserver's defaults for the lease endpoint reconciler
// (--endpoint-reconciler-type=lease): each replica renews its lease every
// 10 s and a lease lives 15 s, so a replica that is gone drops out of the
// kubernetes Service's endpoints within 15 s.
const (
	kubernetesServiceInterval = 10 * time.Second
	masterLeaseTTL            = 15 * time.Second
	// masterLeasesPrefix is where kube-apiserver keeps those leases.
	masterLeasesPrefix = "/registry/masterleases/"
)

// kubernetesService keeps the default/kubernetes Service (the first IP of
// the service range, port 443 → this server's port) and its Endpoints and
// EndpointSlice, with upstream's controller (pkg/controlplane/controller/
// kubernetesservice) and lease endpoint reconciler. Every replica runs it,
// not just a leader: each keeps a lease on its own advertised address, and
// the Endpoints list the addresses whose leases are live.
type kubernetesService struct {
	config kubernetesservice.Config
	leases *storeLeases
	// noAddress, when set, says why this replica lists no endpoint: the
	// Service is still kept, as kube-apiserver's "none" reconciler does.
	noAddress error
	logger    *slog.Logger
}

// newKubernetesService prepares the controller's configuration: the
// Service's IP, and the address this replica advertises (cfg's
// --advertise-address, else the bind address unless it is unspecified or
// loopback, else the host's default address, as kube-apiserver picks it).
func newKubernetesService(cfg Config, st store.Interface) (*kubernetesService, error) {
	serviceIP, err := cfg.kubernetesServiceIP()
	if err != nil {
		return nil, err
	}
	public, noAddress := cfg.advertisedAddress()
	expiring, ok := st.(store.Expiring)
	if !ok {
		return nil, errors.New("the store has no expiring keys for the API server's endpoint leases")
	}
	return &kubernetesService{
		config: kubernetesservice.Config{
			PublicIP: public, ServiceIP: serviceIP, ServicePort: 443, PublicServicePort: cfg.Port,
			EndpointInterval: kubernetesServiceInterval,
		},
		leases:    &storeLeases{store: st, expiring: expiring, ttl: masterLeaseTTL},
		noAddress: noAddress,
		logger:    cfg.Logger.With("component", "kubernetes-service"),
	}, nil
}

// start runs the controller as the API server's own identity until ctx
// ends; the returned wait removes this replica from the endpoints (as
// kube-apiserver does on shutdown) and returns.
func (k *kubernetesService) start(ctx context.Context, lb *inprocess.Loopback) (wait func(), err error) {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("kubernetes service: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informeropts.Factory()...)
	config := k.config
	config.EndpointReconciler = reconcilers.NewLeaseEndpointReconciler(reconcilers.NewEndpointsAdapter(client.CoreV1(), client.DiscoveryV1()), k.leases)
	if k.noAddress != nil {
		k.logger.Warn("the kubernetes Service lists no endpoint for this server", "err", k.noAddress)
		config.EndpointReconciler = reconcilers.NewNoneEndpointReconciler()
	}
	ctrl := kubernetesservice.New(config, client, factory.Core().V1().Services())
	factory.Start(ctx.Done())
	ctrl.Start(ctx.Done())
	return func() {
		ctrl.Stop()
		factory.Shutdown()
	}, nil
}

// storeLeases is upstream's reconcilers.Leases over berth's store: one
// expiring key per replica under masterLeasesPrefix, whose value is the
// replica's address. Upstream's own implementation (reconcilers.NewLeases)
// opens its storage from a transport configuration, which cannot reach the
// embedded etcd member (it has no listener).
type storeLeases struct {
	store    store.Interface
	expiring store.Expiring
	ttl      time.Duration
}

var _ reconcilers.Leases = (*storeLeases)(nil)

// leaseTimeout bounds each store call: upstream's Leases take no context.
const leaseTimeout = 10 * time.Second

// ListLeases returns the addresses whose leases are live.
func (l *storeLeases) ListLeases() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	var ips []string
	opts := store.ListOptions{}
	for {
		page, err := l.store.List(ctx, masterLeasesPrefix, opts)
		if err != nil {
			return nil, err
		}
		for _, kv := range page.KVs {
			ips = append(ips, string(kv.Value))
		}
		if !page.More {
			return ips, nil
		}
		opts = store.ListOptions{Revision: page.Revision, StartKey: page.KVs[len(page.KVs)-1].Key + "\x00"}
	}
}

// UpdateLease creates or renews ip's lease for the full ttl.
func (l *storeLeases) UpdateLease(ip string) error {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	key := masterLeasesPrefix + ip
	kv, err := l.store.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		_, err = l.expiring.CreateExpiring(ctx, key, []byte(ip), l.ttl)
	case err == nil:
		_, err = l.expiring.UpdateExpiring(ctx, key, kv.ModRevision, []byte(ip), l.ttl)
	}
	return err
}

// RemoveLease deletes ip's lease; a missing one is upstream's NotFound,
// which the controller's start-up treats as nothing to clean.
func (l *storeLeases) RemoveLease(ip string) error {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	key := masterLeasesPrefix + ip
	kv, err := l.store.Get(ctx, key)
	if err == nil {
		_, err = l.store.Delete(ctx, key, kv.ModRevision)
	}
	if errors.Is(err, store.ErrNotFound) {
		return apistorage.NewKeyNotFoundError(key, 0)
	}
	return err
}

// Destroy implements reconcilers.Leases: the store is the server's.
func (l *storeLeases) Destroy() {}

// kubernetesServiceIP is the first IP of the service range, as kube-apiserver's.
func (c *Config) kubernetesServiceIP() (net.IP, error) {
	serviceRange, _, err := c.serviceRanges()
	if err != nil {
		return nil, err
	}
	ip, err := netutils.GetIndexedIP(serviceRange, 1)
	if err != nil {
		return nil, fmt.Errorf("the kubernetes service's IP in %s: %w", serviceRange, err)
	}
	return ip, nil
}

// servingNames are the names and addresses the serving certificate covers
// beyond the machine's own (pki.DefaultServingNames): --tls-san, the bind
// and advertised addresses, and, as kube-apiserver's, the kubernetes
// Service's IP, which in-cluster clients dial.
func (c *Config) servingNames() ([]string, error) {
	serviceIP, err := c.kubernetesServiceIP()
	if err != nil {
		return nil, err
	}
	// The Service's full name, as kubeadm adds it: the service-account
	// issuer's discovery document is read there from pods.
	return append(slices.Clone(c.TLSSANs), c.BindAddress, c.AdvertiseAddress, serviceIP.String(),
		"kubernetes.default.svc."+c.clusterDomain()), nil
}

// advertisedAddress is the address the kubernetes Service's endpoints name
// for this replica.
func (c *Config) advertisedAddress() (net.IP, error) {
	if c.AdvertiseAddress != "" {
		return net.ParseIP(c.AdvertiseAddress), nil
	}
	ip, err := utilnet.ResolveBindAddress(net.ParseIP(c.BindAddress))
	if err != nil {
		return nil, fmt.Errorf("no address to advertise for the kubernetes service (set --advertise-address): %w", err)
	}
	return ip, nil
}
