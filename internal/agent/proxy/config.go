// Package proxy runs upstream kube-proxy's nftables proxier for one node:
// it turns Services and EndpointSlices into the node's nftables rules, so
// pods and the host reach Services by ClusterIP and NodePort.
package proxy

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"
)

// Modes of --proxy-mode.
const (
	ModeNFTables = "nftables"
	ModeNone     = "none"
)

// Config is what the node's proxier needs from the agent.
type Config struct {
	NodeName string
	// NodeIPs are the node's addresses, at most one per family; NodePorts
	// answer on them (kube-proxy's nodePortAddresses "primary") and one
	// proxier runs per family among them.
	NodeIPs []net.IP
	// ClusterCIDRs is the pod network: traffic from it is the cluster's own
	// (kube-proxy's --cluster-cidr, detect-local-mode ClusterCIDR). Empty:
	// the node's podCIDRs, read from its Node once node IPAM has set them.
	ClusterCIDRs []string
}

// Validate checks the configuration without touching the host.
func (c Config) Validate() error {
	switch {
	case c.NodeName == "":
		return errors.New("proxy: node name is required")
	case len(c.NodeIPs) == 0:
		return errors.New("proxy: at least one node IP is required")
	}
	for _, cidr := range c.ClusterCIDRs {
		if _, _, err := netutils.ParseCIDRSloppy(cidr); err != nil {
			return fmt.Errorf("proxy: cluster CIDR %q: %w", cidr, err)
		}
	}
	return nil
}

// nodeIPsByFamily maps the node's IPs by family, as kube-proxy's proxiers
// take them.
func (c Config) nodeIPsByFamily() map[v1.IPFamily]net.IP {
	out := map[v1.IPFamily]net.IP{}
	for _, ip := range c.NodeIPs {
		family := v1.IPv4Protocol
		if !netutils.IsIPv4(ip) {
			family = v1.IPv6Protocol
		}
		if _, seen := out[family]; !seen {
			out[family] = ip
		}
	}
	return out
}

// kubeProxyDefaults are the values of kube-proxy's defaulted configuration
// (its v1alpha1 SetDefaults) for the fields the nftables proxier and its
// informers read. They are written out because linking kube-proxy's
// defaulting would link k8s.io/kubernetes/pkg/cluster/ports, and through
// it the cloud provider's and kube-apiserver's server options, into the
// agent; TestKubeProxyConfigurationUsesKubeProxyDefaults compares them
// with upstream's defaulting.
var kubeProxyDefaults = kubeproxyconfig.KubeProxyConfiguration{
	SyncPeriod:       metav1.Duration{Duration: 30 * time.Second},
	MinSyncPeriod:    metav1.Duration{Duration: time.Second},
	ConfigSyncPeriod: metav1.Duration{Duration: 15 * time.Minute},
	NFTables:         kubeproxyconfig.KubeProxyNFTablesConfiguration{MasqueradeBit: ptr.To[int32](14)},
	Linux:            kubeproxyconfig.KubeProxyLinuxConfiguration{MasqueradeAll: false},
}

// kubeProxyConfiguration is kube-proxy's defaulted configuration in
// nftables mode, with this node's NodePort addresses and cluster CIDRs.
func kubeProxyConfiguration(nodeIPs map[v1.IPFamily]net.IP, clusterCIDRs []string) *kubeproxyconfig.KubeProxyConfiguration {
	cfg := kubeProxyDefaults.DeepCopy()
	cfg.Mode = kubeproxyconfig.ProxyModeNFTables
	cfg.DetectLocalMode = kubeproxyconfig.LocalModeClusterCIDR
	cfg.DetectLocal.ClusterCIDRs = slices.Clone(clusterCIDRs)
	// kube-proxy's nftables default, "primary", expanded as its server
	// does: the node IP of each family, never a loopback one.
	for _, family := range []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} {
		ip := nodeIPs[family]
		if ip == nil || ip.IsLoopback() {
			continue
		}
		bits := 32
		if family == v1.IPv6Protocol {
			bits = 128
		}
		cfg.NodePortAddresses = append(cfg.NodePortAddresses, fmt.Sprintf("%s/%d", ip, bits))
	}
	return cfg
}
