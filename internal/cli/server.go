package cli

import (
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth/berth/internal/controller/nodeipam"
	"github.com/berth/berth/internal/controller/nodelifecycle"
	"github.com/berth/berth/internal/server"
)

func newServerCommand() *cobra.Command {
	cfg := server.Config{ClusterCIDR: nodeipam.DefaultClusterCIDR, NodeCIDRMaskSize: nodeipam.DefaultNodeMaskSize}
	var priorityAndFairness bool
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the API server over etcd (embedded by default), with the scheduler and controllers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = slog.Default().With("process", "server")
			cfg.DisablePriorityAndFairness = !priorityAndFairness
			return server.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", DefaultDataDir, "directory for the store, PKI, admin.kubeconfig and join token")
	f.StringVar(&cfg.BindAddress, "bind-address", "0.0.0.0", "IP address to serve the Kubernetes API on")
	f.IntVar(&cfg.Port, "port", DefaultAPIPort, "HTTPS port of the Kubernetes API")
	f.StringSliceVar(&cfg.TLSSANs, "tls-san", nil, "extra DNS names or IPs for the serving certificate")
	f.StringSliceVar(&cfg.EtcdServers, "etcd-servers", nil, "external etcd endpoints (https://...); empty runs an embedded member in --data-dir")
	f.StringVar(&cfg.EtcdCAFile, "etcd-cafile", "", "CA bundle that signed the external etcd's serving certificates")
	f.StringVar(&cfg.EtcdCertFile, "etcd-certfile", "", "client certificate for the external etcd")
	f.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", "", "client key for the external etcd")
	f.BoolVar(&cfg.DisableAgent, "disable-agent", false, "do not run a node agent and runtime on this machine")
	f.BoolVar(&cfg.DisableScheduler, "disable-scheduler", false, "do not run the scheduler (an external one, e.g. kube-scheduler, binds pods)")
	f.StringVar(&cfg.SocketDir, "socket-dir", DefaultSocketDir, "directory for the local runtime's CRI socket")
	f.StringArrayVar(&cfg.InsecureRegistries, "insecure-registry", nil, "registry host the local runtime reaches over plain HTTP (repeatable)")
	f.StringArrayVar(&cfg.RegistryMirrors, "registry-mirror", nil, "HOST=URL: the local runtime pulls HOST's images from URL (repeatable)")
	f.StringArrayVar(&cfg.RuntimeHandlers, "runtime-handler", nil, "extra CRI runtime handler of the local runtime, run with runc as the default one (repeatable)")
	f.StringArrayVar(&cfg.AgentArgs, "agent-arg", nil, "a flag for the local node agent, e.g. --agent-arg=--eviction-hard=nodefs.available<5% (repeatable; see berth agent --help)")
	f.StringVar(&cfg.PauseImage, "pause-image", "", "the local runtime's pod sandbox image (default registry.k8s.io/pause:3.9)")
	f.StringVar(&cfg.NodeName, "node-name", "", "name of this machine's node (default: the host name)")
	f.StringVar(&cfg.ProxyMode, "proxy-mode", "nftables", "the local node's Service data path (berth agent --proxy-mode): nftables runs kube-proxy's nftables proxier in its agent; none leaves Services to another proxy")
	f.StringVar(&cfg.NodeIP, "node-ip", "", "the local node's InternalIP, where the API server reaches its agent (default: the host's first global IPv4 address)")
	f.StringVar(&cfg.ClusterCIDR, "cluster-cidr", cfg.ClusterCIDR, "pod network range; each node gets a podCIDR of --node-cidr-mask-size bits from it (empty: no node IPAM)")
	f.IntVar(&cfg.NodeCIDRMaskSize, "node-cidr-mask-size", cfg.NodeCIDRMaskSize, "prefix length of each node's podCIDR")
	f.StringVar(&cfg.ServiceClusterIPRange, "service-cluster-ip-range", "10.96.0.0/12", "range Services' cluster IPs are allocated from; its first IP is the kubernetes Service's")
	f.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", "30000-32767", "range NodePort Services' node ports are allocated from")
	f.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "address the kubernetes Service's endpoints name for this server (default: --bind-address unless unspecified or loopback, else the host's default address)")
	f.StringVar(&cfg.ClusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain, which cluster DNS answers for")
	f.IntVar(&cfg.ClusterDNSPort, "cluster-dns-port", 53, "UDP and TCP port cluster DNS (CoreDNS, in-process) listens on at the advertised address; the kube-dns Service's endpoints name it (0 picks a free one)")
	f.BoolVar(&cfg.DisableClusterDNS, "disable-cluster-dns", false, "do not run cluster DNS nor keep the kube-system/kube-dns Service")
	f.StringVar(&cfg.TokenAuthFile, "token-auth-file", "", "CSV of static bearer tokens (token,user,uid,\"group1,group2\"), as kube-apiserver's; empty: none")
	f.StringVar(&cfg.AdmissionControlConfigFile, "admission-control-config-file", "", "AdmissionConfiguration file with the PodSecurity plugin's configuration, as kube-apiserver's; empty: enforce baseline, warn and audit restricted, exempt kube-system")
	f.StringVar(&cfg.AuditLogPath, "audit-log-path", "", "file to append the audit log to (audit.k8s.io/v1 JSON lines of denied and state-changing requests); empty: no audit log")
	f.IntVar(&cfg.AuditLogRotation.MaxSizeMB, "audit-log-maxsize", 0, "size in megabytes at which the audit log is rotated (0: 100)")
	f.IntVar(&cfg.AuditLogRotation.MaxBackups, "audit-log-maxbackup", 0, "how many rotated audit log files to keep (0: all, unless --audit-log-maxage removes them)")
	f.IntVar(&cfg.AuditLogRotation.MaxAgeDays, "audit-log-maxage", 0, "days to keep rotated audit log files (0: regardless of age)")
	f.DurationVar(&cfg.EventTTL, "event-ttl", time.Hour, "how long events are kept after their last write")
	f.BoolVar(&cfg.AllowPrivileged, "allow-privileged", false, "admit privileged containers, as kube-apiserver's flag; Pod Security admission still decides per namespace")
	f.DurationVar(&cfg.EtcdCompactionInterval, "etcd-compaction-interval", 5*time.Minute, "how often the store's history is compacted, as kube-apiserver's; older resourceVersions and continue tokens expire after one to two intervals")
	f.DurationVar(&cfg.NodeLifecyclePeriods.Monitor, "node-monitor-period", nodelifecycle.DefaultPeriods.Monitor, "how often the node lifecycle controller checks nodes' health, as kube-controller-manager's")
	f.DurationVar(&cfg.NodeLifecyclePeriods.StartupGrace, "node-startup-grace-period", nodelifecycle.DefaultPeriods.StartupGrace, "how long a starting node may be silent before it is marked unhealthy, as kube-controller-manager's")
	f.DurationVar(&cfg.NodeLifecyclePeriods.MonitorGrace, "node-monitor-grace-period", nodelifecycle.DefaultPeriods.MonitorGrace, "how long a node may be silent before it is marked unhealthy (its Ready condition Unknown, tainted unreachable), as kube-controller-manager's")
	f.BoolVar(&priorityAndFairness, "enable-priority-and-fairness", true, "classify, queue and limit requests by FlowSchemas and PriorityLevelConfigurations, as kube-apiserver; false: the in-flight limits apply instead")
	f.IntVar(&cfg.MaxRequestsInFlight, "max-requests-inflight", 400, "with priority and fairness, added to --max-mutating-requests-inflight for the seats its priority levels share (both 0: the defaults); without, the read-only requests served at once (0: no limit)")
	f.IntVar(&cfg.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", 200, "with priority and fairness, added to --max-requests-inflight; without, the mutating requests served at once (0: no limit)")
	f.BoolVar(&cfg.Profiling, "profiling", false, "serve Go's pprof profiles at /debug/pprof/ to admins (system:masters)")
	f.IntVar(&cfg.AgentPort, "agent-port", 10250, "the local agent's node server port (logs, exec); 0 picks a free one")
	return cmd
}
