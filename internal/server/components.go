package server

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/auth/rbac"
	"github.com/berth/berth/internal/controller/admissionpolicystatus"
	"github.com/berth/berth/internal/controller/apps"
	"github.com/berth/berth/internal/controller/batch"
	"github.com/berth/berth/internal/controller/certificates"
	"github.com/berth/berth/internal/controller/clusterroleaggregation"
	"github.com/berth/berth/internal/controller/disruption"
	"github.com/berth/berth/internal/controller/endpoints"
	"github.com/berth/berth/internal/controller/namespace"
	"github.com/berth/berth/internal/controller/nodeipam"
	"github.com/berth/berth/internal/controller/nodelifecycle"
	"github.com/berth/berth/internal/controller/pcrcleaner"
	"github.com/berth/berth/internal/controller/podautoscaler"
	"github.com/berth/berth/internal/controller/replication"
	"github.com/berth/berth/internal/controller/resourcequota"
	"github.com/berth/berth/internal/controller/tokencleaner"
	"github.com/berth/berth/internal/controller/volumeprotection"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/leader"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/scheduler"
	"github.com/berth/berth/internal/version"
)

// component is a control-plane loop that uses only the API, under its own identity.
type component struct {
	name     string
	identity pki.Identity
	run      func(ctx context.Context, client kubernetes.Interface) error
}

func (c *Config) components(lb *inprocess.Loopback, local *apiserver.LocalReads, debug *apiserver.ControllerDebug, cluster *pki.Cluster) []component {
	var out []component
	clients := newControllerClients(lb)
	if !c.DisableScheduler {
		out = append(out, component{name: "scheduler", identity: pki.SchedulerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
			pods, nodes, err := localPodsAndNodes(ctx, local, pki.SchedulerIdentity)
			if err != nil {
				return err
			}
			return scheduler.New(scheduler.Config{Client: client, Pods: pods, Nodes: nodes, Logger: c.Logger.With("component", "scheduler")}).Run(ctx)
		}})
	}
	out = append(out, component{name: "certificates", identity: pki.ControllerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
		// Upstream's approving and signing controllers' identity; berth
		// also approves serving certificates (rbac.DefaultPolicy).
		decider, err := clients.Client(rbac.CertificateControllerAccount)
		if err != nil {
			return err
		}
		nodes, err := localNodes(ctx, local, pki.ControllerIdentity)
		if err != nil {
			return err
		}
		return certificates.New(certificates.Config{
			Client: decider, InformerClient: client, Nodes: nodes, CA: cluster.ClientCA, Lifetime: c.NodeCertificateLifetime,
			// Node servers are verified against it (nodeTransport).
			ServingCA: cluster.NodeServingCA,
			Logger:    c.Logger.With("component", "certificates"),
		}).Run(ctx)
	}})
	out = append(out, component{name: "root-ca-publisher", identity: pki.ControllerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
		publisher, err := clients.Client("root-ca-cert-publisher")
		if err != nil {
			return err
		}
		return publishRootCA(ctx, client, publisher, cluster.ServerCA.CertPEM)
	}})
	out = append(out, component{name: "node-lifecycle", identity: pki.ControllerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
		pods, nodes, err := localPodsAndNodes(ctx, local, pki.ControllerIdentity)
		if err != nil {
			return err
		}
		return nodelifecycle.Run(ctx, nodelifecycle.Config{Periods: c.NodeLifecyclePeriods,
			ControllerConfig: informeropts.ControllerConfig{Client: client, Clients: clients, Pods: pods, Nodes: nodes, Logger: c.Logger.With("component", "node-lifecycle")}})
	}})
	out = append(out, component{name: "clusterrole-aggregation", identity: pki.ControllerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
		return clusterroleaggregation.Run(ctx, informeropts.ControllerConfig{Client: client, Clients: clients, Logger: c.Logger.With("component", "clusterrole-aggregation")})
	}})
	out = append(out, component{name: "token-cleaner", identity: pki.ControllerIdentity, run: func(ctx context.Context, _ kubernetes.Interface) error {
		// Upstream's token-cleaner Role lets it read and delete kube-system's
		// Secrets, which are all it watches.
		cleaner, err := clients.Client("token-cleaner")
		if err != nil {
			return err
		}
		return tokencleaner.New(tokencleaner.Config{Client: cleaner, Logger: c.Logger.With("component", "token-cleaner")}).Run(ctx)
	}})
	out = append(out, component{name: "podcertificaterequest-cleaner", identity: pki.ControllerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
		return pcrcleaner.Run(ctx, pcrcleaner.Config{Client: client, Clients: clients, Logger: c.Logger.With("component", "podcertificaterequest-cleaner")})
	}})
	out = append(out, c.garbageCollector(clients, local, debug))
	out = append(out, component{name: "namespace", identity: pki.ControllerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
		meta, err := clients.metadata("namespace-controller")
		if err != nil {
			return err
		}
		return namespace.Run(ctx, namespace.Config{Metadata: meta,
			ControllerConfig: informeropts.ControllerConfig{Client: client, Clients: clients, Logger: c.Logger.With("component", "namespace")}})
	}})
	out = append(out, c.podController(clients, local, "replication", replication.Run))
	out = append(out, c.scalingController(clients, local, "disruption", disruption.Name, func(ctx context.Context, cc informeropts.ControllerConfig, restCfg *rest.Config) error {
		return disruption.Run(ctx, disruption.Config{ControllerConfig: cc, REST: restCfg})
	}))
	out = append(out, c.podController(clients, local, "apps", apps.Run))
	out = append(out, c.scalingController(clients, local, "horizontal-pod-autoscaler", podautoscaler.Name, func(ctx context.Context, cc informeropts.ControllerConfig, restCfg *rest.Config) error {
		return podautoscaler.Run(ctx, podautoscaler.Config{ControllerConfig: cc, REST: restCfg})
	}))
	out = append(out, c.podController(clients, local, "batch", batch.Run))
	out = append(out, component{name: "resourcequota", identity: pki.ControllerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
		meta, err := metadataClient(lb, pki.ControllerIdentity)
		if err != nil {
			return err
		}
		pods, err := localPods(ctx, local, pki.ControllerIdentity)
		if err != nil {
			return err
		}
		return resourcequota.Run(ctx, resourcequota.Config{Metadata: meta,
			ControllerConfig: informeropts.ControllerConfig{Client: client, Clients: clients, Pods: pods, Logger: c.Logger.With("component", "resourcequota")}})
	}})
	out = append(out, c.podController(clients, local, "volume-protection", volumeprotection.Run))
	out = append(out, component{name: "admission-policy-status", identity: pki.ControllerIdentity, run: func(ctx context.Context, _ kubernetes.Interface) error {
		restCfg, err := clients.Config("validatingadmissionpolicy-status-controller")
		if err != nil {
			return err
		}
		return admissionpolicystatus.Run(ctx, restCfg)
	}})
	out = append(out, c.podController(clients, local, "endpoints", endpoints.Run))
	if c.ClusterCIDR != "" {
		out = append(out, component{name: "node-ipam", identity: pki.ControllerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
			// kube-controller-manager's node IPAM acts as node-controller.
			writer, err := clients.Client("node-controller")
			if err != nil {
				return err
			}
			nodes, err := localNodes(ctx, local, pki.ControllerIdentity)
			if err != nil {
				return err
			}
			ctrl, err := nodeipam.New(nodeipam.Config{Client: writer, InformerClient: client, Nodes: nodes, ClusterCIDR: c.ClusterCIDR, NodeMaskSize: c.NodeCIDRMaskSize, Logger: c.Logger.With("component", "node-ipam")})
			if err != nil {
				return err
			}
			return ctrl.Run(ctx)
		}})
	}
	return out
}

// podController is a controller of kube-controller-manager's that reads
// pods and nodes through the watch cache and needs nothing else but its
// clients.
func (c *Config) podController(clients *controllerClients, local *apiserver.LocalReads, name string, run func(context.Context, informeropts.ControllerConfig) error) component {
	return component{name: name, identity: pki.ControllerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
		pods, nodes, err := localPodsAndNodes(ctx, local, pki.ControllerIdentity)
		if err != nil {
			return err
		}
		return run(ctx, informeropts.ControllerConfig{Client: client, Clients: clients, Pods: pods, Nodes: nodes, Logger: c.Logger.With("component", name)})
	}}
}

// scalingController is a pod controller that also builds clients of its
// own from its identity's configuration (scale and metrics clients, as
// kube-controller-manager builds them).
func (c *Config) scalingController(clients *controllerClients, local *apiserver.LocalReads, name, identity string,
	run func(context.Context, informeropts.ControllerConfig, *rest.Config) error) component {
	return c.podController(clients, local, name, func(ctx context.Context, cc informeropts.ControllerConfig) error {
		restCfg, err := clients.Config(identity)
		if err != nil {
			return err
		}
		return run(ctx, cc, restCfg)
	})
}

// startComponents runs each component against the server's own API, each
// under its own identity (in-process: internal/auth/inprocess), so they
// hold no more power than an external scheduler or controller would. They
// start once rbacHeld closes: the controllers' rights are the default RBAC
// policy's, as kube-controller-manager's are, and a controller refused at
// first backs off for longer and longer. The returned wait blocks until
// all have stopped after ctx ends.
func startComponents(ctx context.Context, cfg Config, lb *inprocess.Loopback, local *apiserver.LocalReads, debug *apiserver.ControllerDebug, cluster *pki.Cluster,
	rbacHeld <-chan struct{}) (wait func(), err error) {
	var wg sync.WaitGroup
	identity := leader.NewIdentity()
	for _, comp := range cfg.components(lb, local, debug, cluster) {
		client, err := loopbackClient(lb, comp.identity)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", comp.name, err)
		}
		if cfg.electsLeaders() {
			comp.run = elected(cfg, comp, identity)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-rbacHeld:
			case <-ctx.Done():
				return
			}
			if err := comp.run(ctx, client); err != nil && ctx.Err() == nil {
				cfg.Logger.Error("component stopped", "component", comp.name, "err", err)
			}
		}()
	}
	return wg.Wait, nil
}

// metadataClient is a metadata-only client of the server's own API as id, in-process.
func metadataClient(lb *inprocess.Loopback, id pki.Identity) (metadata.Interface, error) {
	restCfg, err := loopbackConfig(lb, id)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	return meta, nil
}

// loopbackClient is a client of the server's own API as id, in-process.
func loopbackClient(lb *inprocess.Loopback, id pki.Identity) (kubernetes.Interface, error) {
	restCfg, err := loopbackConfig(lb, id)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(restCfg)
}

// localPods lists and watches pods from the server's watch cache for id,
// which must be allowed to list and watch them all (apiserver.LocalReads).
func localPods(ctx context.Context, local *apiserver.LocalReads, id pki.Identity) (cache.ListerWatcher, error) {
	return local.ListWatch(ctx, authenticatedUser(id), corev1.SchemeGroupVersion.WithResource("pods"))
}

// localNodes is localPods for nodes.
func localNodes(ctx context.Context, local *apiserver.LocalReads, id pki.Identity) (cache.ListerWatcher, error) {
	return local.ListWatch(ctx, authenticatedUser(id), corev1.SchemeGroupVersion.WithResource("nodes"))
}

// localPodsAndNodes is localPods and localNodes.
func localPodsAndNodes(ctx context.Context, local *apiserver.LocalReads, id pki.Identity) (pods, nodes cache.ListerWatcher, err error) {
	if pods, err = localPods(ctx, local, id); err != nil {
		return nil, nil, err
	}
	nodes, err = localNodes(ctx, local, id)
	return pods, nodes, err
}

// authenticatedUser is identityUser as the authenticator passes it on.
func authenticatedUser(id pki.Identity) *user.DefaultInfo {
	u := identityUser(id)
	u.Groups = append(u.Groups, user.AllAuthenticated)
	return u
}

// identityUser is the user an x509 client certificate for id would name (CN, O).
func identityUser(id pki.Identity) *user.DefaultInfo {
	return &user.DefaultInfo{Name: id.CommonName, Groups: slices.Clone(id.Organizations)}
}

// loopbackConfig is the client configuration behind loopbackClient, for
// components that need another kind of client (metadata, dynamic).
func loopbackConfig(lb *inprocess.Loopback, id pki.Identity) (*rest.Config, error) {
	return loopbackConfigAs(lb, identityUser(id), loopbackUserAgent(id))
}

// loopbackConfigAs is a client configuration of the server's own API as
// u, in-process.
func loopbackConfigAs(lb *inprocess.Loopback, u *user.DefaultInfo, userAgent string) (*rest.Config, error) {
	restCfg, err := lb.Config(u)
	if err != nil {
		return nil, fmt.Errorf("%s client: %w", u.Name, err)
	}
	restCfg.QPS, restCfg.Burst = 5000, 10000 // in-process peers; the server applies its own limits
	restCfg.UserAgent = userAgent
	// Protobuf for every request, as kube-scheduler's and
	// kube-controller-manager's --kube-api-content-type default: client-go's
	// typed clients otherwise send JSON wherever a method builds its own
	// request (a pod's binding, for one).
	restCfg.ContentType = runtime.ContentTypeProtobuf
	return restCfg, nil
}

// upstreamPrograms are the programs a Kubernetes cluster runs the work of
// berth's in-process identities in. managedFields name a write's manager
// by its User-Agent's program, so berth's writes show the same managers
// as a kube-apiserver cluster's (kube-controller-manager for a
// ReplicaSet's pods, kube-apiserver for the default/kubernetes Service).
var upstreamPrograms = map[string]string{
	pki.SchedulerIdentity.CommonName:       "kube-scheduler",
	pki.ControllerIdentity.CommonName:      "kube-controller-manager",
	pki.APIServerClientIdentity.CommonName: "kube-apiserver",
}

// loopbackUserAgent is id's User-Agent, in client-go's format
// (program/version (os/arch) build).
func loopbackUserAgent(id pki.Identity) string {
	program, ok := upstreamPrograms[id.CommonName]
	if !ok {
		program = "berth"
	}
	return fmt.Sprintf("%s/%s (%s/%s) berth", program, version.Version, goruntime.GOOS, goruntime.GOARCH)
}
