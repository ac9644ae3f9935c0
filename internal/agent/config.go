// Package agent is berth's node agent (`berth agent`): it registers its Node,
// keeps its Lease, watches the pods bound to it and drives a CRI runtime to
// run them, reporting their status back. It talks to the API server only
// through client-go and to the runtime only through CRI.
package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth/berth/internal/agent/gc"
	"github.com/berth/berth/internal/agent/node"
	"github.com/berth/berth/internal/agent/pods"
	"github.com/berth/berth/internal/agent/proxy"
	"github.com/berth/berth/internal/auth/bootstraptoken"
)

// Config is what `berth agent` is started with.
type Config struct {
	// Server is the API server's URL (where to join; it overrides the
	// kubeconfig's server when both are given), or several replicas' URLs,
	// comma-separated, which the agent fails over between.
	Server string
	// Token is a join token (berth token create): with it the agent joins
	// (internal/agent/join) and from then on uses only the certificate it
	// obtained, kept in DataDir. Exclusive with Kubeconfig.
	Token      string
	Kubeconfig string // an admin-issued kubeconfig for system:node:NodeName, instead of joining
	NodeName   string
	NodeIP     string // the node's InternalIP; empty means the host's first global IPv4
	// ClusterDNS are the nameservers pods with dnsPolicy ClusterFirst get
	// (the kubelet's --cluster-dns); empty: the host's resolver.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (the kubelet's --cluster-domain).
	ClusterDomain   string
	DataDir         string
	RuntimeEndpoint string // unix:///path of the CRI runtime
	// HostGatewayRoutes keeps a route to every other node's podCIDR via
	// its InternalIP (host-gw; nodes on one L2 segment). Off when another
	// network plugin routes pod traffic.
	HostGatewayRoutes bool
	// ProxyMode is the Service data path on this node: "nftables" runs
	// upstream kube-proxy's nftables proxier (internal/agent/proxy), "none"
	// (or empty) leaves Services to another proxy.
	ProxyMode string
	// ClusterCIDR is the pod network for the proxy (kube-proxy's
	// --cluster-cidr, comma-separated per family); empty: the node's
	// podCIDRs.
	ClusterCIDR string

	// The node server (logs, exec, attach, port-forward for the API
	// server). It runs only when TLSCertFile is given; ClientCAFile is the
	// CA whose client certificates it accepts (the cluster's client CA).
	Address                        string // listen address; default all interfaces
	Port                           int    // 0 picks a free port, which the Node then reports
	TLSCertFile, TLSPrivateKeyFile string
	ClientCAFile                   string

	// Reserved amounts subtracted from capacity to give allocatable
	// (the kubelet's system-reserved plus kube-reserved).
	ReservedCPU     resource.Quantity
	ReservedMemory  resource.Quantity
	ReservedStorage resource.Quantity

	// EvictionHard are the thresholds the node's memory, disk and PID
	// pressure conditions report against (the kubelet's --eviction-hard);
	// nil means node.DefaultThresholds, an empty map reports no pressure.
	EvictionHard node.Thresholds

	// SeccompDefault runs containers without a seccompProfile under the
	// runtime's default profile (the kubelet's --seccomp-default; off by
	// default, as the kubelet's).
	SeccompDefault bool
	// AllowedUnsafeSysctls are sysctls or patterns ending in * (net.core.*)
	// that pods may set beyond the safe ones (the kubelet's
	// --allowed-unsafe-sysctls).
	AllowedUnsafeSysctls []string

	// GC is the garbage collection of dead containers and unused images
	// (the CLI starts from gc.DefaultPolicy); the zero Policy turns it off.
	GC gc.Policy
}

// sysctlAllowlist is what pods on this node may set: the safe sysctls of
// the running kernel and the allowed unsafe ones.
func (c Config) sysctlAllowlist() (*pods.SysctlAllowlist, error) {
	return pods.NewSysctlAllowlist(append(pods.SafeSysctls(pods.KernelVersion()), c.AllowedUnsafeSysctls...))
}

// seccompProfileRoot holds the Localhost seccomp profiles pods may name,
// as the kubelet's <root-dir>/seccomp.
func (c Config) seccompProfileRoot() string { return filepath.Join(c.DataDir, "seccomp") }

// podLogDir holds the pods' CRI log directories (NS_NAME_UID).
func (c Config) podLogDir() string { return filepath.Join(c.DataDir, "pod-logs") }

// Validate checks the configuration without touching anything but DataDir's
// existence, and returns one clear line for the first problem.
// Servers lists the API server replicas named by --server.
func (c Config) Servers() []string {
	var out []string
	for _, s := range strings.Split(c.Server, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (c Config) Validate() error {
	switch {
	case c.NodeName == "":
		return errors.New("--node-name is required")
	case len(validation.IsDNS1123Subdomain(c.NodeName)) > 0:
		return fmt.Errorf("--node-name %q: %s", c.NodeName, strings.Join(validation.IsDNS1123Subdomain(c.NodeName), "; "))
	case c.Kubeconfig != "" && c.Token != "":
		return errors.New("--token and --kubeconfig exclude each other: join with a token, or use an admin-issued kubeconfig")
	case c.Kubeconfig == "" && c.Token == "":
		return errors.New("--token (to join) or --kubeconfig (an admin-issued kubeconfig for system:node:" + c.NodeName + ") is required")
	case slices.ContainsFunc(c.Servers(), func(s string) bool { return !strings.HasPrefix(s, "https://") }):
		return fmt.Errorf("--server %q: want an https:// URL (several comma-separated)", c.Server)
	case c.Token != "" && c.Server == "":
		return errors.New("--server is required with --token")
	case c.RuntimeEndpoint == "":
		return errors.New("--runtime-endpoint is required (starting berth runtime as a child is not available yet)")
	case !strings.HasPrefix(c.RuntimeEndpoint, "unix:///"):
		return fmt.Errorf("--runtime-endpoint %q: want unix:///absolute/path", c.RuntimeEndpoint)
	case c.DataDir == "" || !filepath.IsAbs(c.DataDir):
		return fmt.Errorf("--data-dir %q: want an absolute path", c.DataDir)
	case c.NodeIP != "" && net.ParseIP(c.NodeIP) == nil:
		return fmt.Errorf("--node-ip %q: not an IP address", c.NodeIP)
	case c.ProxyMode != "" && c.ProxyMode != proxy.ModeNFTables && c.ProxyMode != proxy.ModeNone:
		return fmt.Errorf("--proxy-mode %q: want %s or %s", c.ProxyMode, proxy.ModeNFTables, proxy.ModeNone)
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("--port %d: want 0-65535", c.Port)
	case (c.TLSCertFile == "") != (c.TLSPrivateKeyFile == ""):
		return errors.New("--tls-cert-file and --tls-private-key-file go together")
	case c.TLSCertFile != "" && c.ClientCAFile == "":
		return errors.New("--client-ca-file is required with --tls-cert-file: the node server admits only the API server's client certificate")
	}
	for _, cidr := range c.clusterCIDRs() {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			return fmt.Errorf("--cluster-cidr %q: %w", cidr, err)
		}
	}
	if _, err := c.sysctlAllowlist(); err != nil {
		return fmt.Errorf("--allowed-unsafe-sysctls: %w", err)
	}
	if c.GC.ContainerPeriod != 0 {
		if err := c.GC.Validate(); err != nil {
			return fmt.Errorf("garbage collection: %w", err)
		}
	}
	for name, q := range map[string]resource.Quantity{"cpu": c.ReservedCPU, "memory": c.ReservedMemory, "ephemeral-storage": c.ReservedStorage} {
		if q.Sign() < 0 {
			return fmt.Errorf("reserved %s %s: must not be negative", name, q.String())
		}
	}
	if c.Token != "" {
		if _, err := bootstraptoken.ParseJoinToken(c.Token); err != nil {
			return fmt.Errorf("--token: %w", err)
		}
		return nil
	}
	if _, err := os.Stat(c.Kubeconfig); err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	return nil
}

// clusterCIDRs splits --cluster-cidr into its CIDRs.
func (c Config) clusterCIDRs() []string {
	var out []string
	for _, cidr := range strings.Split(c.ClusterCIDR, ",") {
		if cidr = strings.TrimSpace(cidr); cidr != "" {
			out = append(out, cidr)
		}
	}
	return out
}

// proxyConfig is the Service proxy's configuration for a node whose
// InternalIP is nodeIP.
func (c Config) proxyConfig(nodeIP string) (proxy.Config, error) {
	ip := net.ParseIP(nodeIP)
	if ip == nil {
		return proxy.Config{}, fmt.Errorf("service proxy: node IP %q is not an IP address", nodeIP)
	}
	cfg := proxy.Config{NodeName: c.NodeName, NodeIPs: []net.IP{ip}, ClusterCIDRs: c.clusterCIDRs()}
	return cfg, cfg.Validate()
}

// evictionHard is the configured thresholds, or the defaults.
func (c Config) evictionHard() node.Thresholds {
	if c.EvictionHard == nil {
		return node.DefaultThresholds
	}
	return c.EvictionHard
}
