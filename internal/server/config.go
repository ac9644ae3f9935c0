// Package server assembles `berth server`: PKI, the store (embedded etcd by
// default), the API server, and the HTTPS listener. It owns start-up order
// and shutdown; each part lives in its own package.
package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/berth/berth/internal/admission/podsecurity"
	"github.com/berth/berth/internal/agent/proxy"
	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth/audit"
	"github.com/berth/berth/internal/controller/nodeipam"
	"github.com/berth/berth/internal/controller/nodelifecycle"
	"github.com/berth/berth/internal/dirperm"
)

// Config is `berth server`'s configuration (the design's command-line contract).
type Config struct {
	DataDir     string
	SocketDir   string // where the local runtime's CRI socket lives
	BindAddress string
	Port        int
	TLSSANs     []string

	// External etcd; empty EtcdServers means the embedded member in DataDir.
	EtcdServers  []string
	EtcdCAFile   string
	EtcdCertFile string
	EtcdKeyFile  string

	// Passed to the local runtime: registries it may reach over plain HTTP
	// and HOST=URL mirrors (how an offline machine serves its own images).
	InsecureRegistries []string
	RegistryMirrors    []string
	// PauseImage is the local runtime's sandbox image (its default when empty).
	PauseImage string
	// RuntimeHandlers are the local runtime's extra CRI runtime handlers.
	RuntimeHandlers []string
	// AgentArgs are more flags for the local node agent, after the ones
	// the server gives it (as k3s's --kubelet-arg).
	AgentArgs []string

	// ClusterCIDR is the pod network range the node IPAM controller splits
	// into one NodeCIDRMaskSize-bit podCIDR per Node; empty turns it off.
	ClusterCIDR      string
	NodeCIDRMaskSize int

	// ServiceClusterIPRange and ServiceNodePortRange are where Services'
	// cluster IPs and node ports come from (empty: 10.96.0.0/12, as
	// kubeadm, and 30000-32767); the first IP of the range is the
	// kubernetes Service's.
	ServiceClusterIPRange string
	ServiceNodePortRange  string
	// AdvertiseAddress is the address the kubernetes Service's endpoints
	// name for this server; empty: the bind address unless it is
	// unspecified or loopback, else the host's default address.
	AdvertiseAddress string

	// ClusterDomain is the cluster's DNS domain (empty: cluster.local).
	ClusterDomain string
	// ClusterDNSPort is where cluster DNS (CoreDNS, in-process) listens on
	// the advertised address, UDP and TCP; 0 picks a port free for both
	// (tests), the command line's default is 53.
	ClusterDNSPort int
	// DisableClusterDNS turns cluster DNS and the kube-dns Service off.
	DisableClusterDNS bool

	DisableAgent     bool
	DisableScheduler bool // let an external scheduler (e.g. kube-scheduler) bind pods
	NodeName         string
	// AgentPort is the local agent's node server port; 0 lets it pick a
	// free one (tests, several servers on one machine).
	AgentPort int
	// NodeIP is the local node's InternalIP; empty lets the agent pick
	// the host's first global IPv4 address.
	NodeIP string
	// ProxyMode is the local agent's --proxy-mode (nftables: kube-proxy's
	// proxier gives Services their data path; none: another proxy does).
	// Empty leaves the agent's default.
	ProxyMode string

	// NodeCertificateLifetime is how long node client certificates issued
	// through CSRs are valid; 0 means certificates.DefaultLifetime (a year).
	// Tests shorten it to watch renewal.
	NodeCertificateLifetime time.Duration

	// AuditLogPath, when set, is where denied and state-changing requests
	// are recorded (audit.k8s.io/v1 JSON lines, file mode 0600).
	AuditLogPath string
	// AuditLogRotation is when that file is rotated and how many old ones
	// are kept (--audit-log-maxsize, --audit-log-maxbackup, --audit-log-maxage).
	AuditLogRotation audit.Rotation

	// TokenAuthFile, when set, is a CSV of static bearer tokens
	// (kube-apiserver's --token-auth-file format).
	TokenAuthFile string

	// AdmissionControlConfigFile, when set, is an AdmissionConfiguration
	// file (kube-apiserver's --admission-control-config-file) with the
	// PodSecurity plugin's configuration; empty: berth's default (baseline
	// enforced, restricted warned and audited, kube-system exempt).
	AdmissionControlConfigFile string

	// NodeLifecyclePeriods are the node lifecycle controller's timings
	// (kube-controller-manager's --node-monitor-period,
	// --node-startup-grace-period, --node-monitor-grace-period); zero
	// values take upstream's defaults.
	NodeLifecyclePeriods nodelifecycle.Periods

	// AllowPrivileged admits privileged containers (kube-apiserver's
	// --allow-privileged, false by default as there); Pod Security
	// admission still decides per namespace. It is process-wide, as
	// upstream's validation reads it from one global.
	AllowPrivileged bool

	// EtcdCompactionInterval is how often history is compacted (0: every
	// 5 minutes, as kube-apiserver's --etcd-compaction-interval); one to two
	// intervals of it stay readable and watchable.
	EtcdCompactionInterval time.Duration

	// EventTTL is how long events are kept after their last write (0: an
	// hour, as kube-apiserver's --event-ttl).
	EventTTL time.Duration

	// Profiling serves Go's pprof endpoints at /debug/pprof/ to admins
	// (system:masters, or whoever RBAC grants the path); off by default.
	Profiling bool

	// DisablePriorityAndFairness turns API priority and fairness off
	// (kube-apiserver's --enable-priority-and-fairness=false): the
	// in-flight limits then bound read-only and mutating requests apart.
	DisablePriorityAndFairness bool
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight are
	// kube-apiserver's limits of the same names: with API priority and
	// fairness their sum is the seats its priority levels share (both
	// zero: kube-apiserver's defaults, 400 and 200); without, each bounds
	// its kind of request (0: no limit).
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int

	Logger *slog.Logger
}

// Validate reports the first unusable setting as one clear error.
func (c *Config) Validate() error {
	if c.SocketDir == "" {
		c.SocketDir = "/run/berth"
	}
	if c.DataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	if ip := net.ParseIP(c.BindAddress); ip == nil {
		return fmt.Errorf("--bind-address %q is not an IP address", c.BindAddress)
	}
	if c.Port < 1 || c.Port > 65535 {
		return fmt.Errorf("--port %d is out of range 1-65535", c.Port)
	}
	if c.ClusterDNSPort < 0 || c.ClusterDNSPort > 65535 {
		return fmt.Errorf("--cluster-dns-port %d is out of range 0-65535", c.ClusterDNSPort)
	}
	if c.AgentPort < 0 || c.AgentPort > 65535 {
		return fmt.Errorf("--agent-port %d is out of range 0-65535", c.AgentPort)
	}
	if c.AuditLogPath != "" {
		// Checked before anything is created: a bad path changes nothing.
		if st, err := os.Stat(filepath.Dir(c.AuditLogPath)); err != nil || !st.IsDir() {
			return fmt.Errorf("--audit-log-path %s: its directory does not exist", c.AuditLogPath)
		}
	}
	// Read before anything is created: a bad file changes nothing.
	if _, err := staticTokens(c.TokenAuthFile); err != nil {
		return err
	}
	// Read before anything is created: a bad file changes nothing.
	if _, err := podsecurity.LoadConfiguration(c.AdmissionControlConfigFile); err != nil {
		return err
	}
	if err := c.AuditLogRotation.Validate(); err != nil {
		return fmt.Errorf("--audit-log-maxsize/--audit-log-maxbackup/--audit-log-maxage: %w", err)
	}
	if c.MaxRequestsInFlight < 0 || c.MaxMutatingRequestsInFlight < 0 {
		return fmt.Errorf("--max-requests-inflight %d and --max-mutating-requests-inflight %d must not be negative",
			c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight)
	}
	if c.EventTTL < 0 {
		return fmt.Errorf("--event-ttl %s must not be negative", c.EventTTL)
	}
	if c.ProxyMode != "" && c.ProxyMode != proxy.ModeNFTables && c.ProxyMode != proxy.ModeNone {
		return fmt.Errorf("--proxy-mode %q: want %s or %s", c.ProxyMode, proxy.ModeNFTables, proxy.ModeNone)
	}
	if c.NodeIP != "" && net.ParseIP(c.NodeIP) == nil {
		return fmt.Errorf("--node-ip %q is not an IP address", c.NodeIP)
	}
	if c.ClusterCIDR != "" {
		if err := nodeipam.ValidateRange(c.ClusterCIDR, c.NodeCIDRMaskSize); err != nil {
			return fmt.Errorf("--cluster-cidr/--node-cidr-mask-size: %w", err)
		}
	}
	if _, _, err := c.serviceRanges(); err != nil {
		return err
	}
	if c.AdvertiseAddress != "" {
		if ip := net.ParseIP(c.AdvertiseAddress); ip == nil || ip.IsUnspecified() || ip.IsLoopback() {
			return fmt.Errorf("--advertise-address %q is not an address clients can reach", c.AdvertiseAddress)
		}
	}
	if len(c.EtcdServers) > 0 {
		for flag, v := range map[string]string{"--etcd-cafile": c.EtcdCAFile, "--etcd-certfile": c.EtcdCertFile, "--etcd-keyfile": c.EtcdKeyFile} {
			if v == "" {
				return fmt.Errorf("%s is required with --etcd-servers (external etcd is reached over mutual TLS only)", flag)
			}
			if _, err := os.Stat(v); err != nil {
				return fmt.Errorf("%s: %w", flag, err)
			}
		}
	}
	return nil
}

// serviceRanges parses --service-cluster-ip-range and --service-node-port-range.
func (c *Config) serviceRanges() (*net.IPNet, utilnet.PortRange, error) {
	return apiserver.ParseServiceRanges(c.ServiceClusterIPRange, c.ServiceNodePortRange)
}

// Address is host:port the API listens on.
func (c *Config) Address() string { return net.JoinHostPort(c.BindAddress, strconv.Itoa(c.Port)) }

// prepareDataDir creates DataDir (0711) or checks it is a usable directory.
// Others may pass through it but not list it: the local runtime's
// directories are below, and the root of a user-namespaced pod (a host
// user of its own) must reach its files there. Everything else below is
// private by its own mode: keys and kubeconfigs 0600, the store and the
// agent's directory 0700 and 0750; only certificates are 0644.
func (c *Config) prepareDataDir() error {
	if err := dirperm.MakeTraversable(c.DataDir); err != nil {
		return fmt.Errorf("--data-dir %s: %w", c.DataDir, err)
	}
	probe, err := os.CreateTemp(c.DataDir, ".probe")
	if err != nil {
		return fmt.Errorf("--data-dir %s is not writable: %w", c.DataDir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

func (c *Config) path(elem ...string) string {
	return filepath.Join(append([]string{c.DataDir}, elem...)...)
}

// proxyFlags are the local agent's Service proxy flags: the mode, and the
// pod network as its cluster CIDR (which node IPAM splits into podCIDRs).
func (c Config) proxyFlags() []string {
	var flags []string
	if c.ProxyMode != "" {
		flags = append(flags, "--proxy-mode", c.ProxyMode)
	}
	if c.ClusterCIDR != "" {
		flags = append(flags, "--cluster-cidr", c.ClusterCIDR)
	}
	return flags
}

// kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight defaults.
const (
	defaultMaxRequestsInFlight         = 400
	defaultMaxMutatingRequestsInFlight = 200
)

// maxInFlight is the in-flight limits; under API priority and fairness,
// which needs some, kube-apiserver's defaults when neither is set.
func (c *Config) maxInFlight() (reads, writes int) {
	if !c.DisablePriorityAndFairness && c.MaxRequestsInFlight == 0 && c.MaxMutatingRequestsInFlight == 0 {
		return defaultMaxRequestsInFlight, defaultMaxMutatingRequestsInFlight
	}
	return c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight
}
