//lint:file-ignore SA1019 the kube-dns Endpoints are written, as kube-apiserver writes the kubernetes Service's, for clients that still read core/v1 Endpoints.

package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/controlplane/reconcilers"
	netutils "k8s.io/utils/net"

	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/pki"
)

// The kube-dns Service as kubeadm's CoreDNS add-on creates it.
const (
	kubeDNSNamespace = metav1.NamespaceSystem
	kubeDNSName      = "kube-dns"
	// kubeDNSServiceIndex: the Service takes the 10th IP of the service
	// range, as kubeadm's default (10.96.0.10).
	kubeDNSServiceIndex = 10
)

// kubeDNSService keeps kube-system/kube-dns (selector-less) and its
// Endpoints and EndpointSlice: every replica whose API lease is live (the
// kubernetes Service's leases, kubernetes_service.go) at the DNS port.
// Every replica runs it; they write the same thing from the same leases.
type kubeDNSService struct {
	serviceIP net.IP
	port      int32
	leases    reconcilers.Leases
	logger    *slog.Logger
}

func newKubeDNSService(cfg Config, leases reconcilers.Leases) (*kubeDNSService, error) {
	ip, err := cfg.kubeDNSServiceIP()
	if err != nil {
		return nil, err
	}
	return &kubeDNSService{serviceIP: ip, leases: leases,
		logger: cfg.Logger.With("component", "kube-dns-service")}, nil
}

// start keeps the Service and endpoints, with DNS at port, every
// kubeDNSInterval until ctx ends; wait returns once it has stopped.
func (k *kubeDNSService) start(ctx context.Context, lb *inprocess.Loopback, port int32) (func(), error) {
	k.port = port
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("kube-dns service: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			if err := k.reconcile(ctx, client); err != nil && ctx.Err() == nil {
				k.logger.Warn("kube-dns Service not yet kept; retrying", "err", err)
			}
		}, kubeDNSInterval)
	}()
	return func() { <-done }, nil
}

// kubeDNSInterval: a replica that is gone drops out within a lease's life
// plus one interval, as from the kubernetes Service.
const kubeDNSInterval = 5 * time.Second

func (k *kubeDNSService) reconcile(ctx context.Context, client kubernetes.Interface) error {
	if err := k.ensureService(ctx, client); err != nil {
		return err
	}
	ips, err := k.leases.ListLeases()
	if err != nil {
		return fmt.Errorf("list the replicas' leases: %w", err)
	}
	return k.ensureEndpoints(reconcilers.NewEndpointsAdapter(client.CoreV1(), client.DiscoveryV1()), ips)
}

// ensureService creates the Service if it is missing; an existing one is
// left as it is (a user may have changed it, as upstream's add-on allows).
func (k *kubeDNSService) ensureService(ctx context.Context, client kubernetes.Interface) error {
	_, err := client.CoreV1().Services(kubeDNSNamespace).Get(ctx, kubeDNSName, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	_, err = client.CoreV1().Services(kubeDNSNamespace).Create(ctx, k.service(), metav1.CreateOptions{})
	if err == nil {
		k.logger.Info("created the kube-dns Service", "clusterIP", k.serviceIP.String())
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (k *kubeDNSService) service() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: kubeDNSName, Namespace: kubeDNSNamespace, Labels: map[string]string{
			"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS",
		}},
		Spec: corev1.ServiceSpec{
			ClusterIP: k.serviceIP.String(),
			Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(k.port)},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(k.port)},
			},
		},
	}
}

// ensureEndpoints writes the Endpoints and their EndpointSlice (upstream's
// adapter, as for the kubernetes Service) when the addresses changed.
func (k *kubeDNSService) ensureEndpoints(adapter reconcilers.EndpointsAdapter, ips []string) error {
	want := k.endpoints(ips)
	have, err := adapter.Get(kubeDNSNamespace, kubeDNSName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = adapter.Create(kubeDNSNamespace, want)
		return err
	case err != nil:
		return err
	case apiequality.Semantic.DeepEqual(have.Subsets, want.Subsets) && apiequality.Semantic.DeepEqual(have.Labels, want.Labels):
		return adapter.EnsureEndpointSliceFromEndpoints(kubeDNSNamespace, have)
	}
	have.Subsets, have.Labels = want.Subsets, want.Labels
	_, err = adapter.Update(kubeDNSNamespace, have)
	return err
}

func (k *kubeDNSService) endpoints(ips []string) *corev1.Endpoints {
	// Not mirrored: the adapter writes the EndpointSlice itself, as for
	// the kubernetes Service.
	e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: kubeDNSName, Namespace: kubeDNSNamespace, Labels: map[string]string{
		"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS", discoveryv1.LabelSkipMirror: "true",
	}}}
	if len(ips) == 0 {
		return e
	}
	ips = slices.Sorted(slices.Values(ips))
	subset := corev1.EndpointSubset{Ports: []corev1.EndpointPort{
		{Name: "dns", Protocol: corev1.ProtocolUDP, Port: k.port},
		{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: k.port},
	}}
	for _, ip := range ips {
		subset.Addresses = append(subset.Addresses, corev1.EndpointAddress{IP: ip})
	}
	e.Subsets = []corev1.EndpointSubset{subset}
	return e
}

// kubeDNSServiceIP is the 10th IP of the service range.
func (c *Config) kubeDNSServiceIP() (net.IP, error) {
	serviceRange, _, err := c.serviceRanges()
	if err != nil {
		return nil, err
	}
	ip, err := netutils.GetIndexedIP(serviceRange, kubeDNSServiceIndex)
	if err != nil {
		return nil, fmt.Errorf("the kube-dns service's IP in %s: %w", serviceRange, err)
	}
	return ip, nil
}
