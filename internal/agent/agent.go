package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/agent/cri"
	"github.com/berth/berth/internal/agent/failover"
	"github.com/berth/berth/internal/agent/join"
	"github.com/berth/berth/internal/agent/node"
	"github.com/berth/berth/internal/agent/nodeserver"
	"github.com/berth/berth/internal/agent/podcgroup"
	"github.com/berth/berth/internal/agent/pods"
	"github.com/berth/berth/internal/agent/proxy"
	"github.com/berth/berth/internal/memtrim"
	"github.com/berth/berth/internal/version"
)

// The agent's API request rate limit, as the kubelet's defaults.
const (
	agentQPS   = 50
	agentBurst = 100
)

// Run starts the agent from cfg and runs it until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	kubeconfig, renew, err := identity(ctx, cfg, log)
	if err != nil {
		return err
	}
	servers := cfg.Servers()
	restCfg, err := clientcmd.BuildConfigFromFlags(firstOf(servers), kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	if len(servers) > 1 {
		if err := failover.Configure(restCfg, servers); err != nil {
			return err
		}
	}
	restCfg.UserAgent = "berth-agent/" + version.Get().Version
	// Protobuf for every request, as the kubelet's --kube-api-content-type
	// defaults to: client-go's typed clients otherwise send JSON wherever a
	// method builds its own request.
	restCfg.ContentType = runtime.ContentTypeProtobuf
	// The kubelet's defaults: client-go's own (5/s, burst 10) made a burst
	// of pod starts wait seconds in the client for their status patches.
	restCfg.QPS, restCfg.Burst = agentQPS, agentBurst
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("API client: %w", err)
	}
	metrics, err := newMetrics()
	if err != nil {
		return err
	}
	rt, v, err := cri.Dial(ctx, cfg.RuntimeEndpoint, cri.WithMetrics(metrics.cri))
	if err != nil {
		return err
	}
	defer rt.Close()
	if renew != nil {
		var wg sync.WaitGroup
		defer wg.Wait()
		renewCtx, stopRenewing := context.WithCancel(ctx)
		defer stopRenewing()
		wg.Go(func() {
			if err := renew(renewCtx); err != nil {
				log.Error("node certificate renewal stopped", "err", err)
			}
		})
	}
	a := New(cfg, client, rt, v, clock.RealClock{}, log)
	a.metrics = metrics
	if cfg.Token != "" && cfg.TLSCertFile == "" {
		if err := a.prepareJoinedNodeServer(ctx); err != nil {
			return err
		}
	}
	return a.Run(ctx)
}

func firstOf(servers []string) string {
	if len(servers) == 0 {
		return ""
	}
	return servers[0]
}

// Agent is one running node agent.
type Agent struct {
	cfg     Config
	client  kubernetes.Interface
	rt      *cri.Client
	version *runtimeapi.VersionResponse
	clock   clock.WithTicker
	log     *slog.Logger
	facts   func() (node.Facts, error)
	// serverPort is the node server's bound port, reported in the Node.
	serverPort int32
	// A joined node's own serving certificate and the client CA it admits
	// (nodeserving.go); nil with --tls-cert-file.
	serving         *join.Serving
	servingClientCA string
	// metrics is what /metrics serves; Run makes one if none was given
	// (then CRI calls are not counted: the connection was dialed without).
	metrics *metrics
}

// New assembles an agent from an API client and a connected runtime, so
// tests can use a fake clientset and a real CRI endpoint.
func New(cfg Config, client kubernetes.Interface, rt *cri.Client, v *runtimeapi.VersionResponse, clk clock.WithTicker, log *slog.Logger) *Agent {
	return &Agent{cfg: cfg, client: client, rt: rt, version: v, clock: clk, log: log,
		facts: func() (node.Facts, error) {
			f, err := node.Gather(cfg.DataDir)
			if cfg.NodeIP != "" {
				f.InternalIP = cfg.NodeIP
			}
			return f, err
		}}
}

// Run registers the node and runs the heartbeat and the pods until ctx
// ends or one of them fails.
func (a *Agent) Run(ctx context.Context) error {
	facts, err := a.facts()
	if err != nil {
		return fmt.Errorf("read node facts: %w", err)
	}
	a.log.Info("agent starting", "node", a.cfg.NodeName, "runtime", a.version.RuntimeName+" "+a.version.RuntimeVersion)
	if a.metrics == nil {
		if a.metrics, err = newMetrics(); err != nil {
			return err
		}
	}
	// The runtime never removes the pods' cgroups: the pod workers and the
	// collector do.
	cgroups := podcgroup.NewCleaner(podcgroup.HostOS{}, a.log.With("component", "cgroups"))
	sysctls, err := a.cfg.sysctlAllowlist()
	if err != nil {
		return fmt.Errorf("--allowed-unsafe-sysctls: %w", err)
	}
	podManager := pods.New(pods.Config{
		NodeName:      a.cfg.NodeName,
		NodeIP:        facts.InternalIP,
		DataDir:       a.cfg.DataDir,
		PodLogDir:     a.cfg.podLogDir(),
		ResolvConf:    "/etc/resolv.conf",
		ClusterDNS:    a.cfg.ClusterDNS,
		ClusterDomain: a.cfg.ClusterDomain,
		RuntimeName:   a.version.RuntimeName,
		Clock:         a.clock,
		Metrics:       a.metrics.pods,
		Cgroups:       cgroups,

		SeccompDefault:     a.cfg.SeccompDefault,
		SeccompProfileRoot: a.cfg.seccompProfileRoot(),
		Sysctls:            sysctls,
	}, a.client, a.rt.Runtime, a.rt.Images, a.log.With("component", "pods"))
	// Listen before registering: the Node reports the bound port.
	serveNode, err := a.listenNodeServer(podManager)
	if err != nil {
		return err
	}
	registrar := &node.Registrar{Client: a.client, Name: a.cfg.NodeName, Clock: a.clock, Observe: a.observe, Logger: a.log}
	// Register before anything else: the Lease is owned by the Node and
	// pods are only bound to registered nodes.
	if err := registrar.Sync(ctx); err != nil {
		return err
	}
	memtrim.DropStartupPages(a.log)

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return registrar.Run(ctx) })
	g.Go(func() error {
		node.NewLeaseController(a.client, a.cfg.NodeName, a.clock, node.LeaseRenewInterval).Run(ctx)
		return nil
	})
	g.Go(func() error { return podManager.Run(ctx) })
	g.Go(func() error { return a.runGarbageCollector(ctx, podManager, cgroups) })
	g.Go(func() error { return a.podNetwork().Run(ctx) })
	if a.cfg.ProxyMode == proxy.ModeNFTables {
		proxyCfg, err := a.cfg.proxyConfig(facts.InternalIP)
		if err != nil {
			return err
		}
		g.Go(func() error { return proxy.Run(ctx, proxyCfg, a.client, a.log.With("component", "proxy")) })
	}
	if serveNode != nil {
		g.Go(func() error { return serveNode(ctx) })
	}
	err = g.Wait()
	a.log.Info("agent stopped", "node", a.cfg.NodeName)
	return err
}

// observe looks at the machine and the runtime for the node's status.
func (a *Agent) observe(ctx context.Context) (node.Observation, error) {
	facts, err := a.facts()
	if err != nil {
		return node.Observation{}, err
	}
	return node.Observation{
		Facts:          facts,
		Reserved:       node.Reserved{CPU: a.cfg.ReservedCPU, Memory: a.cfg.ReservedMemory, Storage: a.cfg.ReservedStorage},
		Thresholds:     a.cfg.evictionHard(),
		RuntimeName:    a.version.RuntimeName,
		RuntimeVersion: a.version.RuntimeVersion,
		RuntimeErr:     runtimeReady(ctx, a.rt.Runtime),
		AgentVersion:   version.Get().Version,
		ServerPort:     a.serverPort,
	}, nil
}

// listenNodeServer binds the node server when it is configured and returns
// the function that serves it; nil when it is off. /pods reads podSource.
func (a *Agent) listenNodeServer(podSource nodeserver.PodSource) (func(context.Context) error, error) {
	tlsCfg, err := a.nodeServerTLS()
	if err != nil || tlsCfg == nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(a.cfg.Address, strconv.Itoa(a.cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("node server: %w", err)
	}
	a.serverPort = int32(ln.Addr().(*net.TCPAddr).Port)
	h := nodeserver.Handler(nodeserver.Config{Runtime: a.rt.Runtime, Pods: podSource, Metrics: a.metrics.registry, Logger: a.log.With("component", "nodeserver")})
	return func(ctx context.Context) error { return nodeserver.Serve(ctx, ln, tlsCfg, h, a.log) }, nil
}

// runtimeReady asks the runtime for its RuntimeReady and NetworkReady
// conditions, as the kubelet does for the node's Ready condition.
func runtimeReady(ctx context.Context, rt runtimeapi.RuntimeServiceClient) error {
	resp, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return fmt.Errorf("CRI Status: %w", err)
	}
	var problems []string
	for _, c := range resp.GetStatus().GetConditions() {
		if (c.Type == runtimeapi.RuntimeReady || c.Type == runtimeapi.NetworkReady) && !c.Status {
			problems = append(problems, fmt.Sprintf("%s=false reason:%s message:%s", c.Type, c.Reason, c.Message))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
