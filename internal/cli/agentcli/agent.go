// Package agentcli is `berth agent`'s command: its flags, handed over to
// internal/agent. berth-agent (cmd/berth-agent) is built from it alone, and
// `berth agent` execs that binary (internal/cli), so the node agent's
// process carries none of the API server's, etcd's or kubectl's packages.
package agentcli

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/berth/berth/internal/agent"
	"github.com/berth/berth/internal/agent/gc"
	"github.com/berth/berth/internal/agent/node"
	"github.com/berth/berth/internal/agent/proxy"
	"github.com/berth/berth/internal/cli/clibase"
)

// Execute runs `berth ARGS` with `agent` as the only subcommand and returns
// the process exit code.
func Execute(args []string) int { return clibase.ExecuteCompanion(NewCommand(), args) }

// NewCommand is `berth agent`: the node agent.
func NewCommand() *cobra.Command {
	cfg := agent.Config{DataDir: filepath.Join(clibase.DefaultDataDir, "agent"), Port: 10250, GC: gc.DefaultPolicy}
	var pauseImage string
	var reservedCPU, reservedMemory, reservedStorage string
	evictionHard := map[string]string{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: register this node, run the pods bound to it through a CRI runtime, report their status",
		Long: `Run berth's node agent (the kubelet's role) for one node.

The agent joins with --server URL --token TOKEN (berth token create prints
tokens): it checks that the server's CA matches the hash in the token, asks for
a certificate for system:node:NAME with a key it generates and keeps in
--data-dir (0600), and from then on authenticates only with that certificate,
renewing it before it expires. A restart with a valid certificate does not use
the token again. Without --tls-cert-file, a joined agent obtains its node
server's certificate the same way (a kubelet-serving CSR for its name and the
addresses its Node reports, renewed before it expires) and admits only callers
with the API server's client certificate, whose CA the server publishes. Alternatively --kubeconfig names an admin-issued kubeconfig
for system:node:NAME. Starting berth runtime as a child is not available yet:
pass --runtime-endpoint (berth runtime's socket or containerd's, e.g.
unix:///run/containerd/containerd.sock).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, r := range []struct {
				flag string
				in   string
				out  *resource.Quantity
			}{
				{"--reserved-cpu", reservedCPU, &cfg.ReservedCPU},
				{"--reserved-memory", reservedMemory, &cfg.ReservedMemory},
				{"--reserved-ephemeral-storage", reservedStorage, &cfg.ReservedStorage},
			} {
				q, err := resource.ParseQuantity(r.in)
				if err != nil {
					return fmt.Errorf("%s %q: %w", r.flag, r.in, err)
				}
				*r.out = q
			}
			if cmd.Flags().Changed("eviction-hard") {
				th, err := node.ParseThresholds(evictionHard)
				if err != nil {
					return fmt.Errorf("--eviction-hard: %w", err)
				}
				cfg.EvictionHard = th
			}
			cfg.GC.PinnedImages = []string{pauseImage}
			return agent.Run(cmd.Context(), cfg, slog.Default())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Server, "server", "", "API server URL (https://HOST:PORT) to join, overriding the kubeconfig's; several replicas comma-separated, failed over between (the first is where to join)")
	f.StringVar(&cfg.Token, "token", "", "join token berth::sha256:<CA hash>::<id>.<secret> (berth token create)")
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig for system:node:NAME issued by an administrator (instead of --token)")
	f.StringVar(&cfg.NodeName, "node-name", "", "this node's name (a DNS subdomain)")
	f.StringVar(&cfg.NodeIP, "node-ip", "", "the node's InternalIP, where the API server reaches its node server (default: the host's first global IPv4 address)")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for the agent's node certificate and kubeconfig, per-pod files and pod logs")
	f.BoolVar(&cfg.HostGatewayRoutes, "host-gw-routes", true, "route to other nodes' podCIDRs via their InternalIPs (nodes on one L2 segment); turn off when another network plugin routes pods")
	f.StringSliceVar(&cfg.ClusterDNS, "cluster-dns", []string{"10.96.0.10"}, "nameservers for pods with dnsPolicy ClusterFirst, comma-separated, as the kubelet's (the kube-dns Service's IP); empty: the host's resolver")
	f.StringVar(&cfg.ClusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain, added to pods' search list, as the kubelet's")
	f.StringVar(&cfg.ProxyMode, "proxy-mode", proxy.ModeNFTables, "the Service data path: nftables runs kube-proxy's nftables proxier in the agent (needs the nft command); none leaves Services to another proxy on this host")
	f.StringVar(&cfg.ClusterCIDR, "cluster-cidr", "", "the pod network, as kube-proxy's --cluster-cidr (comma-separated, one per family); empty: this node's podCIDRs")
	f.StringVar(&cfg.RuntimeEndpoint, "runtime-endpoint", "", "CRI runtime socket, unix:///PATH")
	f.StringVar(&cfg.Address, "address", "", "node server listen address (default all interfaces)")
	f.IntVar(&cfg.Port, "port", cfg.Port, "node server port (logs, exec, attach, port-forward); 0 picks a free one, reported in the Node")
	f.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "node server certificate (PEM); without it a token-joined agent requests its own (kubelet-serving CSR), and with --kubeconfig the node server is off")
	f.StringVar(&cfg.TLSPrivateKeyFile, "tls-private-key-file", "", "node server private key (PEM)")
	f.StringVar(&cfg.ClientCAFile, "client-ca-file", "", "CA whose client certificates may call the node server (the cluster's client CA)")
	f.StringVar(&reservedCPU, "reserved-cpu", "0", "CPU kept back from pods (allocatable = capacity - reserved)")
	f.StringVar(&reservedMemory, "reserved-memory", "0", "memory kept back from pods")
	f.StringVar(&reservedStorage, "reserved-ephemeral-storage", "0", "ephemeral storage kept back from pods")
	f.Var(cliflag.NewLangleSeparatedMapStringString(&evictionHard), "eviction-hard",
		"thresholds below which the node reports memory, disk or PID pressure, as the kubelet's (e.g. memory.available<100Mi,nodefs.available<10%,pid.available<10%, the default); the signals given replace the defaults, and 0% turns one off")
	f.IntVar(&cfg.GC.MaxDeadPerContainer, "maximum-dead-containers-per-container", cfg.GC.MaxDeadPerContainer, "dead instances of each container of a pod kept, newest first (at least 1; -1 keeps all)")
	f.IntVar(&cfg.GC.HighPercent, "image-gc-high-threshold", cfg.GC.HighPercent, "image filesystem usage (percent) at which unused images are removed, least recently used first")
	f.IntVar(&cfg.GC.LowPercent, "image-gc-low-threshold", cfg.GC.LowPercent, "image filesystem usage (percent) image garbage collection frees down to")
	f.DurationVar(&cfg.GC.MinImageAge, "minimum-image-ttl-duration", cfg.GC.MinImageAge, "an unused image is removed only this long after the agent first saw it")
	f.BoolVar(&cfg.SeccompDefault, "seccomp-default", false, "run containers that name no seccompProfile under the runtime's default profile (RuntimeDefault) instead of unconfined, as the kubelet's --seccomp-default; Localhost profiles are read from DATA_DIR/seccomp")
	f.StringSliceVar(&cfg.AllowedUnsafeSysctls, "allowed-unsafe-sysctls", nil, "sysctls or patterns ending in * (e.g. 'net.core.*') that pods may set beyond the safe ones, comma-separated; each must be namespaced (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*, net.*)")
	f.StringVar(&pauseImage, "pod-infra-container-image", "registry.k8s.io/pause:3.9", "the runtime's sandbox image, never removed by image garbage collection (images the runtime reports pinned are kept too)")
	return cmd
}
