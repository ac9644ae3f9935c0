package proxy

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	kubeproxyconfigv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyconfigscheme "k8s.io/kubernetes/pkg/proxy/apis/config/scheme"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/kubeproxytable"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestProxyWritesServiceRulesAndStopsCleanly runs the node's proxier
// against a fake API holding one Service and its EndpointSlice: the
// Service's cluster IP and its endpoint reach the host's nftables, and once
// Run has returned no goroutine of the proxier, its informers or its event
// broadcaster is left (a leftover sync loop would rewrite the rules).
func TestProxyWritesServiceRulesAndStopsCleanly(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Nft)
	kubeproxytable.Own(t)
	// Goroutines from before the proxy (the test's own, klog's) stay.
	before := goleak.IgnoreCurrent()

	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.7.0/24", PodCIDRs: []string{"10.244.7.0/24"}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.77.7", ClusterIPs: []string{"10.96.77.7"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		}},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.7.9"}, NodeName: ptr.To("node-a"),
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		},
	)
	cfg := Config{NodeName: "node-a", NodeIPs: []net.IP{net.ParseIP("10.250.0.1")}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, client, slog.New(slog.NewTextHandler(testWriter{t}, nil))) }()

	wait.UntilTrue(t, time.Minute, "the service's cluster IP and endpoint in table ip kube-proxy", func(ctx context.Context) (bool, error) {
		rules := kubeproxytable.List(ctx)
		return strings.Contains(rules, "10.96.77.7") && strings.Contains(rules, "10.244.7.9"), nil
	})
	// A Service created later reaches the rules too (the sync loop runs).
	if _, err := client.CoreV1().Services("default").Create(t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "default"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.77.8", ClusterIPs: []string{"10.96.77.8"},
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, time.Minute, "the later service's cluster IP in table ip kube-proxy", func(ctx context.Context) (bool, error) {
		return strings.Contains(kubeproxytable.List(ctx), "10.96.77.8"), nil
	})
	rules := kubeproxytable.List(t.Context())
	// The cluster CIDR came from the node's podCIDR: pod traffic is local.
	if !strings.Contains(rules, "10.244.7.0/24") {
		t.Errorf("rules do not name the node's podCIDR as the cluster's own traffic:\n%s", rules)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of its context ending")
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("goroutines left after the proxy stopped: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	ip := []net.IP{net.ParseIP("10.0.0.1")}
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"complete", Config{NodeName: "a", NodeIPs: ip, ClusterCIDRs: []string{"10.244.0.0/16"}}, true},
		{"podCIDR from the node", Config{NodeName: "a", NodeIPs: ip}, true},
		{"no node name", Config{NodeIPs: ip}, false},
		{"no node IP", Config{NodeName: "a"}, false},
		{"bad cluster CIDR", Config{NodeName: "a", NodeIPs: ip, ClusterCIDRs: []string{"10.244.0.0"}}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// The proxier's configuration is kube-proxy's defaulted one: the values
// the agent writes out are those upstream's defaulting gives.
func TestKubeProxyConfigurationUsesKubeProxyDefaults(t *testing.T) {
	external := &kubeproxyconfigv1alpha1.KubeProxyConfiguration{}
	proxyconfigscheme.Scheme.Default(external)
	upstream := &kubeproxyconfig.KubeProxyConfiguration{}
	if err := proxyconfigscheme.Scheme.Convert(external, upstream, nil); err != nil {
		t.Fatal(err)
	}
	cfg := kubeProxyConfiguration(Config{NodeName: "a", NodeIPs: []net.IP{net.ParseIP("10.0.0.1")}}.nodeIPsByFamily(), []string{"10.244.0.0/16"})
	if *cfg.NFTables.MasqueradeBit != *upstream.NFTables.MasqueradeBit || cfg.SyncPeriod != upstream.SyncPeriod ||
		cfg.MinSyncPeriod != upstream.MinSyncPeriod || cfg.ConfigSyncPeriod != upstream.ConfigSyncPeriod ||
		cfg.Linux.MasqueradeAll != upstream.Linux.MasqueradeAll {
		t.Errorf("masqueradeBit %d syncPeriod %v minSyncPeriod %v configSyncPeriod %v masqueradeAll %v; kube-proxy's defaults are %d %v %v %v %v",
			*cfg.NFTables.MasqueradeBit, cfg.SyncPeriod, cfg.MinSyncPeriod, cfg.ConfigSyncPeriod, cfg.Linux.MasqueradeAll,
			*upstream.NFTables.MasqueradeBit, upstream.SyncPeriod, upstream.MinSyncPeriod, upstream.ConfigSyncPeriod, upstream.Linux.MasqueradeAll)
	}
	if strings.Join(cfg.NodePortAddresses, ",") != "10.0.0.1/32" {
		t.Errorf("nodePortAddresses = %v, want the node IP", cfg.NodePortAddresses)
	}
	loopback := kubeProxyConfiguration(Config{NodeIPs: []net.IP{net.ParseIP("127.0.0.1")}}.nodeIPsByFamily(), nil)
	if len(loopback.NodePortAddresses) != 0 {
		t.Errorf("a loopback node IP gave nodePortAddresses %v; kube-proxy's primary skips loopback", loopback.NodePortAddresses)
	}
}

// testWriter sends the proxy's logs to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
