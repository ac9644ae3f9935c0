package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	proxyapis "k8s.io/kubernetes/pkg/proxy/apis"
	kubeproxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyconfig "k8s.io/kubernetes/pkg/proxy/config"
	"k8s.io/kubernetes/pkg/proxy/nftables"
	proxyutil "k8s.io/kubernetes/pkg/proxy/util"
)

// podCIDRPoll is how often the proxy looks for the node's podCIDR while
// node IPAM has not set it yet.
const podCIDRPoll = time.Second

// Run runs the node's proxier until ctx ends, and returns only once
// everything it started has stopped. The nftables rules stay, as
// kube-proxy's do when it exits: Services keep working across a restart,
// and the next start replaces them.
func Run(ctx context.Context, cfg Config, client kubernetes.Interface, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Upstream logs through klog; give it the agent's structured logger.
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(log.Handler()))
	clusterCIDRs := cfg.ClusterCIDRs
	if len(clusterCIDRs) == 0 {
		var err error
		if clusterCIDRs, err = waitForPodCIDRs(ctx, client, cfg.NodeName, log); err != nil {
			return err
		}
	}
	nodeIPs := cfg.nodeIPsByFamily()
	kpCfg := kubeProxyConfiguration(nodeIPs, clusterCIDRs)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, "kube-proxy")
	proxiers, err := newProxiers(ctx, kpCfg, cfg.NodeName, nodeIPs, recorder)
	if err != nil {
		return err
	}
	broadcaster.StartRecordingToSink(ctx.Done())
	log.Info("service proxy starting", "mode", ModeNFTables, "node", cfg.NodeName,
		"clusterCIDRs", clusterCIDRs, "nodePortAddresses", kpCfg.NodePortAddresses)
	return run(ctx, kpCfg, cfg.NodeName, client, proxiers)
}

// newProxiers makes one upstream nftables proxier per family of the node's
// IPs, as kube-proxy's createProxier does per supported family.
func newProxiers(ctx context.Context, kpCfg *kubeproxyconfig.KubeProxyConfiguration, nodeName string, nodeIPs map[v1.IPFamily]net.IP, recorder events.EventRecorder) ([]*nftables.Proxier, error) {
	detectors := localDetectors(kpCfg.DetectLocal.ClusterCIDRs)
	var out []*nftables.Proxier
	for _, family := range []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} {
		ip, ok := nodeIPs[family]
		if !ok {
			continue
		}
		p, err := nftables.NewProxier(ctx, kpCfg, family, detectors[family], nodeName, ip, recorder, nil, false)
		if err != nil {
			return nil, fmt.Errorf("proxy: nftables proxier for %s: %w", family, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// localDetectors is kube-proxy's detect-local-mode ClusterCIDR: traffic
// from the cluster CIDR of a family is the cluster's own.
func localDetectors(clusterCIDRs []string) map[v1.IPFamily]proxyutil.LocalTrafficDetector {
	out := map[v1.IPFamily]proxyutil.LocalTrafficDetector{
		v1.IPv4Protocol: proxyutil.NewNoOpLocalDetector(),
		v1.IPv6Protocol: proxyutil.NewNoOpLocalDetector(),
	}
	for family, cidrs := range proxyutil.MapCIDRsByIPFamily(clusterCIDRs) {
		out[family] = proxyutil.NewDetectLocalByCIDR(cidrs[0].String())
	}
	return out
}

// run feeds the proxiers from informers as kube-proxy's ProxyServer.Run
// does, and runs their sync loops. It stops the informers and their
// handlers first, then the loops: a handler's Sync must never find its
// loop gone.
func run(ctx context.Context, kpCfg *kubeproxyconfig.KubeProxyConfiguration, nodeName string, client kubernetes.Interface, proxiers []*nftables.Proxier) error {
	var loops []func(<-chan struct{})
	for _, p := range proxiers {
		r, err := syncRunner(p)
		if err != nil {
			return err
		}
		loops = append(loops, r.Loop)
	}
	factories, configs, err := informersFor(ctx, kpCfg, nodeName, client, proxiers)
	if err != nil {
		return err
	}
	var handlers sync.WaitGroup
	for _, c := range configs {
		handlers.Go(func() { c(ctx.Done()) })
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	stopLoops := make(chan struct{})
	var syncing sync.WaitGroup
	for _, loop := range loops {
		syncing.Go(func() { loop(stopLoops) })
	}
	<-ctx.Done()
	handlers.Wait()
	for _, f := range factories {
		f.Shutdown()
	}
	close(stopLoops)
	syncing.Wait()
	klog.FromContext(ctx).Info("service proxy stopped")
	return nil
}

// informersFor makes kube-proxy's informers: Services that are not headless
// and not claimed by another proxy (service.kubernetes.io/service-proxy-name),
// EndpointSlices that are not headless, and this node's labels for topology.
// It returns the factories and the configs' Run functions.
func informersFor(ctx context.Context, kpCfg *kubeproxyconfig.KubeProxyConfiguration, nodeName string, client kubernetes.Interface, proxiers []*nftables.Proxier) ([]informers.SharedInformerFactory, []func(<-chan struct{}), error) {
	noProxyName, err := labels.NewRequirement(proxyapis.LabelServiceProxyName, selection.DoesNotExist, nil)
	if err != nil {
		return nil, nil, err
	}
	noHeadless, err := labels.NewRequirement(v1.IsHeadlessService, selection.DoesNotExist, nil)
	if err != nil {
		return nil, nil, err
	}
	resync := kpCfg.ConfigSyncPeriod.Duration
	factory := func(tweak func(*metav1.ListOptions)) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(client, resync,
			informers.WithTransform(trimManagedFields), informers.WithTweakListOptions(tweak))
	}
	services := factory(func(o *metav1.ListOptions) {
		o.LabelSelector = labels.NewSelector().Add(*noProxyName).String()
		o.FieldSelector = fields.OneTermNotEqualSelector("spec.clusterIP", v1.ClusterIPNone).String()
	})
	slices := factory(func(o *metav1.ListOptions) { o.LabelSelector = labels.NewSelector().Add(*noHeadless).String() })
	thisNode := factory(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", nodeName).String()
	})

	serviceConfig := proxyconfig.NewServiceConfig(ctx, services.Core().V1().Services(), resync)
	sliceConfig := proxyconfig.NewEndpointSliceConfig(ctx, slices.Discovery().V1().EndpointSlices(), resync)
	topology := proxyconfig.NewNodeTopologyConfig(ctx, thisNode.Core().V1().Nodes(), resync)
	for _, p := range proxiers {
		serviceConfig.RegisterEventHandler(p)
		sliceConfig.RegisterEventHandler(p)
		topology.RegisterEventHandler(p)
	}
	return []informers.SharedInformerFactory{services, slices, thisNode},
		[]func(<-chan struct{}){serviceConfig.Run, sliceConfig.Run}, nil
}

// trimManagedFields drops what kube-proxy never reads from cached objects.
func trimManagedFields(obj any) (any, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

// waitForPodCIDRs waits until node IPAM has given the node its podCIDRs,
// which then stand for the cluster CIDR.
func waitForPodCIDRs(ctx context.Context, client kubernetes.Interface, nodeName string, log *slog.Logger) ([]string, error) {
	var cidrs []string
	err := wait.PollUntilContextCancel(ctx, podCIDRPoll, true, func(ctx context.Context) (bool, error) {
		node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			log.Debug("service proxy: reading the node for its podCIDR", "err", err)
			return false, nil
		}
		cidrs = node.Spec.PodCIDRs
		if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
			cidrs = []string{node.Spec.PodCIDR}
		}
		return len(cidrs) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("proxy: waiting for node %s's podCIDR (or give --cluster-cidr): %w", nodeName, err)
	}
	return cidrs, nil
}
