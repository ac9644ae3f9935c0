package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/kubernetes/pkg/capabilities"

	"github.com/berth/berth/internal/admission/noderestriction"
	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/atomicfile"
	"github.com/berth/berth/internal/auth"
	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/auth/node"
	"github.com/berth/berth/internal/auth/rbac"
	"github.com/berth/berth/internal/memtrim"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/store/etcd"
)

// shutdownGrace bounds how long in-flight requests (long watches excepted:
// they are cut) may take once SIGTERM arrives.
const shutdownGrace = 10 * time.Second

// Run starts berth server and blocks until ctx ends, then shuts down in order:
// stop accepting, drain requests, stop the API server's loops, close the store.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := cfg.prepareDataDir(); err != nil {
		return err
	}
	capabilities.Setup(cfg.AllowPrivileged, 0)
	// Bind first: a port in use is the most common start-up failure and
	// should be reported before anything is created.
	ln, err := net.Listen("tcp", cfg.Address())
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Address(), err)
	}
	defer ln.Close()

	servingNames, err := cfg.servingNames()
	if err != nil {
		return err
	}
	cluster, err := pki.LoadOrCreateCluster(cfg.path("pki"), pki.DefaultServingNames(servingNames))
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := writeClientFiles(cfg, cluster); err != nil {
		return err
	}

	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Warn("closing store", "err", err)
			return
		}
		log.Info("shutdown: store closed")
	}()

	// The server's own clients (controllers, scheduler, authenticators'
	// lookups) reach its handler in-process, once serve starts.
	lb := inprocess.New(log.With("component", "in-process-api"))
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(cluster.ClientCA.Cert)
	// The Node authorizer's graph is fed through the API once it serves
	// (startNodeGraph); until then nodes' reads of their pods' objects are refused.
	nodeGraph := node.NewGraph()
	access, err := newRBACPolicy(cfg, lb)
	if err != nil {
		return err
	}
	policy := append(auth.BootstrapPolicy(), rbac.ComponentBindings()...)
	authz, err := auth.NewAuthorizer(node.NewAuthorizer(nodeGraph), policy, access.Authorizer)
	if err != nil {
		return err
	}
	tokens, err := newBootstrapTokens(cfg, lb)
	if err != nil {
		return err
	}
	toNodes, err := nodeTransport(cluster)
	if err != nil {
		return err
	}
	saTokens, err := newServiceAccountTokens(cfg, lb)
	if err != nil {
		return err
	}
	static, err := staticTokens(cfg.TokenAuthFile)
	if err != nil {
		return err
	}
	auditLog, err := openAuditing(cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := auditLog.close(); err != nil {
			log.Warn("closing the audit log", "err", err)
		}
	}()
	// The API outlives ctx until serve has stopped the loops that use it
	// (their informers read its watch caches in-process) and shuts the
	// listeners down, which calls stopAPI; on any earlier return, the
	// deferred stopAPI below.
	apiCtx, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAPI()
	metrics, local := prometheus.NewRegistry(), apiserver.NewLocalReads()
	plugins, err := newAdmissionPlugins(cfg, lb, local, authz, metrics, apiCtx.Done())
	if err != nil {
		return err
	}
	flow, err := newFlowControl(cfg, lb, plugins.factory, log.With("component", "flowcontrol"))
	if err != nil {
		return err
	}
	apiCfg := apiserver.Config{
		NodeTransport: toNodes,
		Store:         st,
		Authenticator: auth.NewAuthenticator(clientCAs, append([]authenticator.Token{lb, tokens.authn, saTokens.authn}, static...)...),
		Authorizer:    authz,
		RuleResolver:  auth.NewRuleResolver(policy, access.informers.Listers.RulesFor),
		ReadView:      node.PodView,
		Admission:     plugins.chain(noderestriction.New(nodeGraph, plugins.nodes), access.EscalationCheck(authz)),
		Logger:        log.With("component", "apiserver"),
		Metrics:       metrics,
	}
	apiCfg.ServiceAccountTokens, apiCfg.OpenIDMetadata = saTokens.api, saTokens.metadata
	if apiCfg.Loopback, err = loopbackConfig(lb, pki.APIServerClientIdentity); err != nil {
		return err
	}
	apiCfg.WebhookServiceResolver, apiCfg.Informers = plugins.serviceResolver(), plugins.factory
	apiCfg.ProxyClientCertFile, apiCfg.ProxyClientKeyFile = cluster.FrontProxyClientCertFile, cluster.FrontProxyClientKeyFile
	apiCfg.EnableProfiling = cfg.Profiling
	apiCfg.LocalReads = local
	apiCfg.ControllerDebug = apiserver.NewControllerDebug()
	apiCfg.EventTTL = cfg.EventTTL
	apiCfg.FlowControl = flow.filter
	apiCfg.MaxRequestsInFlight, apiCfg.MaxMutatingRequestsInFlight = cfg.maxInFlight()
	if apiCfg.ServiceClusterIPRange, apiCfg.ServiceNodePortRange, err = cfg.serviceRanges(); err != nil {
		return err
	}
	kubeService, err := newKubernetesService(cfg, st)
	if err != nil {
		return err
	}
	apiCfg.ServiceAllocations = &apiserver.ServiceAllocations{}
	auditLog.configure(&apiCfg)
	handler, err := apiserver.New(apiCtx, apiCfg)
	if err != nil {
		return fmt.Errorf("api server: %w", err)
	}
	compaction := cfg.EtcdCompactionInterval
	if compaction <= 0 {
		compaction = defaultCompactionInterval
	}
	go st.RunCompactor(apiCtx, compaction)
	waitRBAC := access.start(apiCtx)
	waitAdmission := plugins.start(apiCtx)
	waitFlowControl := flow.start(apiCtx)
	defer func() { stopAPI(); waitRBAC(); waitAdmission(); waitFlowControl() }()
	dns, err := newClusterDNS(cfg, kubeService)
	if err != nil {
		return err
	}
	services := &serviceLoops{kubernetes: kubeService, allocations: apiCfg.ServiceAllocations, dns: dns}
	return serve(ctx, cfg, ln, lb, handler, apiCfg.LocalReads, apiCfg.ControllerDebug, cluster, clientCAs, stopAPI, nodeGraph, tokens, services, access.defaultsHeld)
}

// defaultCompactionInterval is kube-apiserver's --etcd-compaction-interval
// default.
const defaultCompactionInterval = 5 * time.Minute

// serve runs the HTTPS server, and the in-process one (socket pairs) for the
// server's own clients, until ctx ends; stopAPI ends the API's long requests
// (watches) as shutdown begins so they do not hold it up.
func serve(ctx context.Context, cfg Config, ln net.Listener, lb *inprocess.Loopback, handler http.Handler, local *apiserver.LocalReads, debug *apiserver.ControllerDebug, cluster *pki.Cluster, clientCAs *x509.CertPool, stopAPI func(), nodeGraph *node.Graph, tokens *bootstrapTokens, services *serviceLoops, rbacHeld <-chan struct{}) error {
	log := cfg.Logger
	serving, err := tls.LoadX509KeyPair(cluster.ServingCertFile, cluster.ServingKeyFile)
	if err != nil {
		return fmt.Errorf("load serving certificate: %w", err)
	}
	srv := &http.Server{
		Handler: handler,
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{serving},
			ClientCAs:    clientCAs,
			// Certificates are verified here when given; requests without
			// one reach the authenticator chain (tokens) or get 401 there.
			ClientAuth: tls.VerifyClientCertIfGiven,
			NextProtos: []string{"h2", "http/1.1"},
		},
		ReadHeaderTimeout: 30 * time.Second,
		// net/http's own errors (TLS handshakes refused: a client
		// certificate from another CA, or expired) as structured warnings.
		ErrorLog: slog.NewLogLogger(log.With("component", "https").Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(stopAPI)
	lb.RegisterOnShutdown(stopAPI)
	defer lb.Close() // on an early return; after Shutdown, a no-op
	errc := make(chan error, 2)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	inProcessDone := make(chan struct{})
	go func() {
		defer close(inProcessDone)
		if err := lb.Serve(handler); err != nil {
			errc <- err
		}
	}()
	log.Info("berth server is serving", "address", cfg.Address(),
		"kubeconfig", cfg.path("admin.kubeconfig"), "store", storeDescription(cfg))

	compCtx, stopComponents := context.WithCancel(ctx)
	defer stopComponents()
	waitComponents, err := startComponents(compCtx, cfg, lb, local, debug, cluster, rbacHeld)
	if err != nil {
		return err
	}
	waitGraph, err := startNodeGraph(compCtx, cfg, lb, local, nodeGraph)
	if err != nil {
		return err
	}
	waitTokens := tokens.start(compCtx)
	waitServices, err := services.start(compCtx, lb)
	if err != nil {
		return err
	}
	if err := ensureDefaultToken(compCtx, cfg, lb, cluster); err != nil {
		return err
	}
	if err := publishClientCA(compCtx, cfg, lb, cluster); err != nil {
		return err
	}
	nodeCtx, stopNode := context.WithCancel(ctx)
	defer stopNode()
	waitNode := func() {}
	if !cfg.DisableAgent {
		if waitNode, err = startLocalNode(nodeCtx, cfg, cluster); err != nil {
			return err
		}
	}
	memtrim.DropStartupPages(log)
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Order: the local agent and runtime (containers keep running), then the
	// loops that use the API, then the API itself, then the store.
	log.Info("shutting down")
	stopNode()
	waitNode()
	if !cfg.DisableAgent {
		log.Info("shutdown: local node stopped (its containers keep running)")
	}
	stopComponents()
	waitComponents()
	waitGraph()
	waitTokens()
	waitServices()
	log.Info("shutdown: control loops stopped")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := errors.Join(srv.Shutdown(shutdownCtx), lb.Shutdown(shutdownCtx)); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	<-inProcessDone
	log.Info("shutdown: API server stopped")
	return nil
}

// startNodeGraph keeps the Node authorizer's graph current through the
// server's own API (pods from its watch cache), as the API server's own
// identity (system:apiserver), so it sees every pod and CSR as stored. The
// returned wait blocks until it has stopped after ctx ends.
func startNodeGraph(ctx context.Context, cfg Config, lb *inprocess.Loopback, local *apiserver.LocalReads, graph *node.Graph) (wait func(), err error) {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("node authorizer graph: %w", err)
	}
	pods, err := localPods(ctx, local, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("node authorizer graph: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := graph.Run(ctx, client, pods, cfg.Logger.With("component", "node-authorizer")); err != nil && ctx.Err() == nil {
			cfg.Logger.Error("node authorizer graph stopped; nodes' reads of their pods' objects are refused", "err", err)
		}
	}()
	return func() { <-done }, nil
}

func openStore(ctx context.Context, cfg Config) (*etcd.Store, error) {
	log := cfg.Logger.With("component", "etcd")
	if len(cfg.EtcdServers) == 0 {
		st, err := etcd.Embedded(ctx, cfg.path("etcd"), log)
		if err != nil {
			return nil, fmt.Errorf("embedded etcd in %s: %w", cfg.path("etcd"), err)
		}
		return st, nil
	}
	st, err := etcd.External(ctx, cfg.EtcdServers, cfg.EtcdCAFile, cfg.EtcdCertFile, cfg.EtcdKeyFile, log)
	if err != nil {
		return nil, fmt.Errorf("external etcd %v: %w", cfg.EtcdServers, err)
	}
	return st, nil
}

func storeDescription(cfg Config) string {
	if len(cfg.EtcdServers) == 0 {
		return "embedded etcd (in-process, no listener)"
	}
	return fmt.Sprintf("external etcd %v", cfg.EtcdServers)
}

// writeClientFiles publishes what clients need to trust and reach the server:
// DATA_DIR/server-ca.crt and DATA_DIR/admin.kubeconfig (0600, kept across
// restarts while its certificate is still valid for this cluster).
func writeClientFiles(cfg Config, cluster *pki.Cluster) error {
	if err := atomicfile.WriteFile(cfg.path("server-ca.crt"), cluster.ServerCA.CertPEM, 0o644); err != nil {
		return err
	}
	adminPath := cfg.path("admin.kubeconfig")
	if adminKubeconfigValid(adminPath, cluster, cfg.clientURL()) {
		return nil
	}
	kc, err := cluster.ClientKubeconfig(cfg.clientURL(), pki.AdminIdentity)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(adminPath, kc, 0o600)
}

// clientURL is the URL local clients use: loopback when bound to all addresses.
func (c *Config) clientURL() string {
	host := c.BindAddress
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, fmt.Sprint(c.Port))
}

func adminKubeconfigValid(path string, cluster *pki.Cluster, server string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	return pki.KubeconfigMatches(data, server, cluster.ClientCA)
}
