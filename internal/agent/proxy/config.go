// Package proxy runs upstream kube-proxy's nftables proxier for one node:
// it turns Services and EndpointSlices into the node's nftables rules, so
// pods and the host reach Services by ClusterIP and NodePort.
package proxy

import (
	"errors"
	"fmt"
	"net"
	"slices"

	v1 "k8s.io/api/core/v1"
	kubeproxyconfigv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyconfigscheme "k8s.io/kubernetes/pkg/proxy/apis/config/scheme"
	netutils "k8s.io/utils/net"
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

// kubeProxyConfiguration is kube-proxy's own defaulted configuration
// (masqueradeBit 14, syncPeriod 30s, minSyncPeriod 1s, its conntrack and
// config-sync settings) in nftables mode, with this node's NodePort
// addresses and cluster CIDRs.
func kubeProxyConfiguration(nodeIPs map[v1.IPFamily]net.IP, clusterCIDRs []string) (*kubeproxyconfig.KubeProxyConfiguration, error) {
	external := &kubeproxyconfigv1alpha1.KubeProxyConfiguration{}
	proxyconfigscheme.Scheme.Default(external)
	cfg := &kubeproxyconfig.KubeProxyConfiguration{}
	if err := proxyconfigscheme.Scheme.Convert(external, cfg, nil); err != nil {
		return nil, fmt.Errorf("kube-proxy defaults: %w", err)
	}
	cfg.Mode = kubeproxyconfig.ProxyModeNFTables
	cfg.DetectLocalMode = kubeproxyconfig.LocalModeClusterCIDR
	cfg.DetectLocal.ClusterCIDRs = slices.Clone(clusterCIDRs)
	// kube-proxy's nftables default, "primary", expanded as its server
	// does: the node IP of each family, never a loopback one.
	cfg.NodePortAddresses = nil
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
	return cfg, nil
}
