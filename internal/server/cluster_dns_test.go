package server_test

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/vethaddr"
	"github.com/berth/berth/internal/testkit/wait"
)

// dnsTestAddress is where TestClusterDNSAnswersFromTheAPI's server
// advertises, and so serves DNS: an address of the test's own.
var dnsTestAddress = vethaddr.Pair{Link: "berthdns0", NetNS: "berthdns", HostIP: "10.250.251.1", PeerIP: "10.250.251.2"}

// TestClusterDNSAnswersFromTheAPI runs a real server with cluster DNS on a
// free port, finds it through the kube-dns Service's endpoints as a pod's
// resolver would, and asks it, over UDP and TCP, what kubeadm's CoreDNS
// answers: Services' A records, a named port's SRV, a headless Service's
// endpoints, a pod's A record, and NXDOMAIN for a missing name.
func TestClusterDNSAnswersFromTheAPI(t *testing.T) {
	t.Parallel()
	vethaddr.Add(t, dnsTestAddress)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := cluster.InProcess(t, "", func(ctx context.Context, dataDir string, port int) error {
		return server.Run(ctx, server.Config{DataDir: dataDir, BindAddress: "127.0.0.1", AdvertiseAddress: dnsTestAddress.HostIP,
			Port: port, DisableAgent: true, Logger: log})
	})
	cs := srv.Admin
	kubeDNS := waitForKubeDNSService(t, cs)
	if kubeDNS.Spec.ClusterIP != "10.96.0.10" || kubeDNS.Labels["k8s-app"] != "kube-dns" || kubeDNS.Spec.Selector != nil {
		t.Fatalf("kube-dns Service: clusterIP %s, labels %v, selector %v; want 10.96.0.10, k8s-app=kube-dns, none",
			kubeDNS.Spec.ClusterIP, kubeDNS.Labels, kubeDNS.Spec.Selector)
	}
	addr := waitForKubeDNSEndpoint(t, cs)

	q := dnsQuerier{t: t, addr: addr}
	q.waitA("kubernetes.default.svc.cluster.local.", "10.96.0.1")

	podNamespace(t, cs, "dnstest")
	web := createService(t, cs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "dnstest"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8080}},
	}})
	q.waitA("web.dnstest.svc.cluster.local.", web.Spec.ClusterIP)
	srv2 := q.exchange("tcp", "_http._tcp.web.dnstest.svc.cluster.local.", dns.TypeSRV)
	if len(srv2.Answer) != 1 {
		t.Fatalf("SRV of the named port: %v", srv2.Answer)
	}
	if s := srv2.Answer[0].(*dns.SRV); s.Port != 8080 || s.Target != "web.dnstest.svc.cluster.local." {
		t.Fatalf("SRV of the named port: %v; want port 8080, target web.dnstest.svc.cluster.local.", s)
	}

	createService(t, cs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "dnstest"}, Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone,
		Ports:     []corev1.ServicePort{{Name: "sql", Protocol: corev1.ProtocolTCP, Port: 5432}},
	}})
	createEndpointSlice(t, cs, "dnstest", "db", "10.1.2.3", "10.1.2.4")
	q.waitA("db.dnstest.svc.cluster.local.", "10.1.2.3", "10.1.2.4")

	q.waitA("1-2-3-4.dnstest.pod.cluster.local.", "1.2.3.4")

	missing := q.exchange("udp", "missing.dnstest.svc.cluster.local.", dns.TypeA)
	if missing.Rcode != dns.RcodeNameError {
		t.Fatalf("a missing Service: rcode %s, want NXDOMAIN", dns.RcodeToString[missing.Rcode])
	}
}

func waitForKubeDNSService(t *testing.T, cs kubernetes.Interface) *corev1.Service {
	t.Helper()
	var svc *corev1.Service
	wait.UntilNil(t, time.Minute, "the kube-system/kube-dns Service", func() error {
		var err error
		svc, err = cs.CoreV1().Services("kube-system").Get(context.Background(), "kube-dns", metav1.GetOptions{})
		return err
	})
	return svc
}

// waitForKubeDNSEndpoint is the address the kube-dns EndpointSlice names
// for DNS over UDP (the one replica's advertised address and DNS port).
func waitForKubeDNSEndpoint(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	var addr string
	wait.Until(t, time.Minute, "the kube-dns EndpointSlice to name this server's DNS address", func() bool {
		slices, err := cs.DiscoveryV1().EndpointSlices("kube-system").List(context.Background(),
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kube-dns"})
		if err != nil || len(slices.Items) != 1 {
			t.Logf("kube-dns EndpointSlices: %v, %v", slices, err)
			return false
		}
		s := slices.Items[0]
		if len(s.Endpoints) != 1 || len(s.Endpoints[0].Addresses) != 1 {
			return false
		}
		for _, p := range s.Ports {
			if p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP && p.Port != nil {
				addr = net.JoinHostPort(s.Endpoints[0].Addresses[0], strconv.Itoa(int(*p.Port)))
			}
		}
		return addr != ""
	})
	return addr
}

func createService(t *testing.T, cs kubernetes.Interface, svc *corev1.Service) *corev1.Service {
	t.Helper()
	created, err := cs.CoreV1().Services(svc.Namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Service %s/%s: %v", svc.Namespace, svc.Name, err)
	}
	return created
}

// createEndpointSlice gives a selector-less Service ready endpoints at ips.
func createEndpointSlice(t *testing.T, cs kubernetes.Interface, ns, service string, ips ...string) {
	t.Helper()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: service + "-manual", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("sql"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](5432)}},
	}
	for _, ip := range ips {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), slice, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create EndpointSlice for %s/%s: %v", ns, service, err)
	}
}

// dnsQuerier asks the server's DNS port directly.
type dnsQuerier struct {
	t    *testing.T
	addr string
}

func (q dnsQuerier) exchange(network, name string, qtype uint16) *dns.Msg {
	q.t.Helper()
	m, err := q.try(network, name, qtype)
	if err != nil {
		q.t.Fatalf("%s %s over %s from %s: %v", dns.TypeToString[qtype], name, network, q.addr, err)
	}
	return m
}

func (q dnsQuerier) try(network, name string, qtype uint16) (*dns.Msg, error) {
	msg := new(dns.Msg)
	msg.SetQuestion(name, qtype)
	client := &dns.Client{Net: network, Timeout: 5 * time.Second}
	m, _, err := client.Exchange(msg, q.addr)
	return m, err
}

// waitA waits until name's A records, over UDP and then TCP, are exactly
// want (the plugin's watches fill in after an object is written).
func (q dnsQuerier) waitA(name string, want ...string) {
	q.t.Helper()
	slices.Sort(want)
	for _, network := range []string{"udp", "tcp"} {
		var last []string
		wait.Until(q.t, time.Minute, "A records of "+name+" over "+network+" to be "+strings.Join(want, ","), func() bool {
			m, err := q.try(network, name, dns.TypeA)
			if err != nil {
				return false
			}
			last = nil
			for _, rr := range m.Answer {
				if a, ok := rr.(*dns.A); ok {
					last = append(last, a.A.String())
				}
			}
			slices.Sort(last)
			return slices.Equal(last, want)
		})
	}
}
