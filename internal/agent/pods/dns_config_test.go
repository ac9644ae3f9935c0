package pods

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestDNSConfigIsTheKubeletsForEveryPolicy checks the pod's resolv.conf
// against what the kubelet writes for each dnsPolicy: cluster DNS with the
// namespace's search list and ndots:5 (then the host's search domains),
// the host's resolver for Default and host-network ClusterFirst, exactly the
// pod's dnsConfig for None, its dnsConfig merged into the others (an option
// replacing the default's value), and the kubelet's limits (3 nameservers,
// 32 search domains).
func TestDNSConfigIsTheKubeletsForEveryPolicy(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.test\noptions rotate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := unitManager(t, Config{NodeName: "n1", ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: resolv})
	clusterSearch := []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.test"}
	var manySearches []string
	for i := range 40 {
		manySearches = append(manySearches, fmt.Sprintf("s%d.test", i))
	}
	for _, tc := range []struct {
		name                     string
		policy                   corev1.DNSPolicy
		hostNetwork              bool
		dnsConfig                *corev1.PodDNSConfig
		servers, search, options []string
	}{
		{name: "ClusterFirst", policy: corev1.DNSClusterFirst,
			servers: []string{"10.96.0.10"}, search: clusterSearch, options: []string{"ndots:5"}},
		{name: "unset is ClusterFirst", policy: "",
			servers: []string{"10.96.0.10"}, search: clusterSearch, options: []string{"ndots:5"}},
		{name: "ClusterFirst on the host network is Default", policy: corev1.DNSClusterFirst, hostNetwork: true,
			servers: []string{"192.0.2.53"}, search: []string{"example.test"}, options: []string{"rotate"}},
		{name: "ClusterFirstWithHostNet", policy: corev1.DNSClusterFirstWithHostNet, hostNetwork: true,
			servers: []string{"10.96.0.10"}, search: clusterSearch, options: []string{"ndots:5"}},
		{name: "Default", policy: corev1.DNSDefault,
			servers: []string{"192.0.2.53"}, search: []string{"example.test"}, options: []string{"rotate"}},
		{name: "None", policy: corev1.DNSNone, dnsConfig: &corev1.PodDNSConfig{
			Nameservers: []string{"198.51.100.1"}, Searches: []string{"a.test"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}},
			servers: []string{"198.51.100.1"}, search: []string{"a.test"}, options: []string{"ndots:2"}},
		{name: "ClusterFirst with dnsConfig merged", policy: corev1.DNSClusterFirst, dnsConfig: &corev1.PodDNSConfig{
			Nameservers: []string{"198.51.100.1"}, Searches: []string{"a.test"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}},
			servers: []string{"10.96.0.10", "198.51.100.1"}, search: append(slices.Clone(clusterSearch), "a.test"), options: []string{"ndots:2", "edns0"}},
		{name: "limits", policy: corev1.DNSNone, dnsConfig: &corev1.PodDNSConfig{
			Nameservers: []string{"198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4"}, Searches: manySearches},
			servers: []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"}, search: manySearches[:32]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{DNSPolicy: tc.policy, HostNetwork: tc.hostNetwork, DNSConfig: tc.dnsConfig}}
			pod.Name, pod.Namespace = "p", "ns"
			got, err := m.dnsConfig(pod)
			if err != nil {
				t.Fatalf("dnsConfig: %v", err)
			}
			// The kubelet merges options through a map: their order is not kept.
			options := slices.Sorted(slices.Values(got.Options))
			if !slices.Equal(got.Servers, tc.servers) || !slices.Equal(got.Searches, tc.search) || !slices.Equal(options, slices.Sorted(slices.Values(tc.options))) {
				t.Errorf("got servers %v, search %v, options %v\nwant servers %v, search %v, options %v",
					got.Servers, got.Searches, got.Options, tc.servers, tc.search, tc.options)
			}
		})
	}
}

// TestDNSConfigWithoutClusterDNSIsTheHosts: with --cluster-dns empty,
// ClusterFirst pods get the host's resolver, as from the kubelet.
func TestDNSConfigWithoutClusterDNSIsTheHosts(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := unitManager(t, Config{NodeName: "n1", ResolvConf: resolv})
	got, err := m.dnsConfig(&corev1.Pod{})
	if err != nil {
		t.Fatalf("dnsConfig: %v", err)
	}
	if !slices.Equal(got.Servers, []string{"192.0.2.53"}) || !slices.Equal(got.Searches, []string{"example.test"}) {
		t.Errorf("got %+v, want the host's resolver", got)
	}
}
