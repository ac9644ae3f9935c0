package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/atomicfile"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/supervisor"
)

// localNode describes the agent and runtime `berth server` runs on its own
// machine unless --disable-agent.
type localNode struct {
	name          string
	runtimeSocket string
	dataDir       string
}

func (c *Config) localNode() (localNode, error) {
	name := c.NodeName
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return localNode{}, fmt.Errorf("--node-name not given and no host name: %w", err)
		}
		name = h
	}
	return localNode{
		name:          name,
		runtimeSocket: filepath.Join(c.SocketDir, "runtime.sock"),
		dataDir:       c.DataDir,
	}, nil
}

// startLocalNode supervises `berth runtime` and, once it answers CRI
// Version, `berth agent` as children. The agent gets a node identity
// (system:node:NAME) and nothing else: no store address, no credentials
// beyond its own certificate.
func startLocalNode(ctx context.Context, cfg Config, cluster *pki.Cluster) (wait func(), err error) {
	node, err := cfg.localNode()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find berth executable: %w", err)
	}
	kubeconfig, err := cluster.ClientKubeconfig(cfg.clientURL(), pki.NodeIdentity(node.name))
	if err != nil {
		return nil, err
	}
	kubeconfigPath := cfg.path("agent", "node.kubeconfig")
	if err := atomicfile.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(node.runtimeSocket), 0o755); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	dnsFlags, err := cfg.localAgentDNSFlags()
	if err != nil {
		return nil, err
	}
	serverFlags, err := issueNodeServerFiles(cfg, cluster, node.name)
	if err != nil {
		return nil, err
	}
	endpoint := "unix://" + node.runtimeSocket
	runtimeArgs := []string{"runtime", "--root", cfg.path("runtime"), "--state-dir", cfg.path("runtime-state"), "--listen", endpoint}
	for _, r := range cfg.InsecureRegistries {
		runtimeArgs = append(runtimeArgs, "--insecure-registry", r)
	}
	for _, m := range cfg.RegistryMirrors {
		runtimeArgs = append(runtimeArgs, "--registry-mirror", m)
	}
	for _, h := range cfg.RuntimeHandlers {
		runtimeArgs = append(runtimeArgs, "--runtime-handler", h)
	}
	if cfg.PauseImage != "" {
		runtimeArgs = append(runtimeArgs, "--pause-image", cfg.PauseImage)
	}
	if cfg.ClusterCIDR != "" {
		// Node IPAM gives the node a podCIDR: no pod gets an address before it.
		runtimeArgs = append(runtimeArgs, "--wait-for-pod-cidr")
	}
	runtime := supervisor.Child{
		Name: "runtime", Path: self, Output: os.Stderr, Args: runtimeArgs,
		Ready: func(ctx context.Context) error { return criVersion(ctx, node.runtimeSocket) },
	}
	agent := supervisor.Child{
		Name: "agent", Path: self, Output: os.Stderr,
		Args: append([]string{"agent", "--kubeconfig", kubeconfigPath, "--node-name", node.name,
			"--data-dir", cfg.path("agent"), "--runtime-endpoint", endpoint}, slices.Concat(serverFlags, dnsFlags, cfg.proxyFlags(), cfg.AgentArgs)...),
	}
	log := cfg.Logger.With("component", "supervisor")
	var wg sync.WaitGroup
	runtimeUp := make(chan struct{})
	wg.Add(2)
	go func() { defer wg.Done(); supervisor.Run(ctx, runtime, log, runtimeUp) }()
	go func() {
		defer wg.Done()
		select {
		case <-runtimeUp:
			supervisor.Run(ctx, agent, log, nil)
		case <-ctx.Done():
		}
	}()
	return wg.Wait, nil
}

// issueNodeServerFiles gives the local agent's node server a serving
// certificate from the node serving CA (which the API server trusts when it
// calls the node) and the client CA that signs the API server's own client
// certificate, and returns the agent flags naming them, plus its port and
// address.
func issueNodeServerFiles(cfg Config, cluster *pki.Cluster, nodeName string) ([]string, error) {
	names := pki.DefaultServingNames([]string{nodeName, cfg.NodeIP})
	certPEM, keyPEM, err := cluster.NodeServingCA.Issue(pki.Identity{
		CommonName: "system:node:" + nodeName, DNSNames: names.DNSNames, IPs: names.IPs, Server: true,
	})
	if err != nil {
		return nil, fmt.Errorf("node server certificate: %w", err)
	}
	certPath, keyPath, caPath := cfg.path("agent", "node-server.crt"), cfg.path("agent", "node-server.key"), cfg.path("agent", "client-ca.crt")
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{keyPath, keyPEM, 0o600}, {certPath, certPEM, 0o644}, {caPath, cluster.ClientCA.CertPEM, 0o644}} {
		if err := atomicfile.WriteFile(f.path, f.data, f.mode); err != nil {
			return nil, err
		}
	}
	flags := []string{"--tls-cert-file", certPath, "--tls-private-key-file", keyPath, "--client-ca-file", caPath,
		"--port", strconv.Itoa(cfg.AgentPort)}
	if cfg.NodeIP != "" {
		flags = append(flags, "--node-ip", cfg.NodeIP)
	}
	return flags, nil
}

// criVersion is the runtime's readiness probe: a CRI Version call.
func criVersion(ctx context.Context, socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{})
	return err
}
