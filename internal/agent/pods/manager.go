package pods

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/pkg/kubelet/clustertrustbundle"
	"k8s.io/kubernetes/pkg/kubelet/podcertificate"
	"k8s.io/kubernetes/pkg/kubelet/runtimeclass"
	"k8s.io/kubernetes/pkg/security/apparmor"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/agent/node"
	"github.com/berth/berth/internal/agent/podcgroup"
)

// Config configures the pod Manager.
type Config struct {
	NodeName      string
	NodeIP        string
	DataDir       string   // per-pod files (termination messages) under DataDir/pods
	PodLogDir     string   // CRI log directories, NS_NAME_UID under it
	ClusterDNS    []string // nameservers for dnsPolicy ClusterFirst; empty: use the host's
	ClusterDomain string
	ResolvConf    string // the host's resolver configuration, "" for none
	RuntimeName   string // from CRI Version; prefixes container IDs ("containerd://...")

	// RelistPeriod paces the runtime relist that notices container changes
	// when the runtime has no event stream; ResyncPeriod is how often each
	// pod is converged even when nothing was noticed.
	RelistPeriod time.Duration
	ResyncPeriod time.Duration
	// Clock measures back-off and stamps status times; a fake one in tests.
	Clock clock.WithTicker
	// Metrics, when set, receive the worker count and sync and pull times.
	Metrics *Metrics
	// Cgroups removes a pod's cgroup once its last sandbox is removed; nil
	// leaves pod cgroups alone.
	Cgroups *podcgroup.Cleaner

	// SeccompDefault gives containers without a seccompProfile the
	// runtime's default profile instead of none (the kubelet's
	// --seccomp-default). SeccompProfileRoot holds Localhost profiles
	// (default DataDir/seccomp).
	SeccompDefault     bool
	SeccompProfileRoot string
	// Sysctls admits pods' sysctls; nil allows the safe sysctls of the
	// running kernel only.
	Sysctls *SysctlAllowlist
	// AppArmor checks that the node can enforce the AppArmor profiles a
	// pod asks for; nil checks this host (apparmor.NewValidator).
	AppArmor apparmor.Validator
}

// Manager runs the pods bound to one node.
type Manager struct {
	cfg     Config
	client  kubernetes.Interface
	rt      runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient
	log     *slog.Logger
	backoff *backoff
	sent    sentStatuses
	allocs  *allocations // what each pod's containers were allocated
	prober  *prober
	clock   clock.WithTicker
	tokens  *tokenCache // projected service-account tokens
	// trustBundles projects ClusterTrustBundles (set by Run before any
	// pod worker starts).
	trustBundles clustertrustbundle.Manager
	// podCerts issues pods' projected certificates (set by Run before
	// any pod worker starts).
	podCerts podcertificate.Manager
	services *serviceEnv // set by Run before any pod worker starts
	userns   *usernsRanges
	// runtimeClasses resolves pods' RuntimeClasses to runtime handlers.
	runtimeClasses *runtimeclass.Manager

	sysctls  *SysctlAllowlist
	appArmor apparmor.Validator

	// afterSync, when set (tests), is called after every sync of a pod.
	afterSync func(types.UID, error)

	recorder record.EventRecorder
	store    cache.Store // the informer's pods
	// synced is the informer's store once its first list has completed,
	// for readers outside the workers (Pods).
	synced atomic.Pointer[cache.Store]

	mu      sync.Mutex
	workers map[types.UID]*worker
	wg      sync.WaitGroup // one per running worker
}

// New returns a Manager; Run starts it.
func New(cfg Config, client kubernetes.Interface, rt runtimeapi.RuntimeServiceClient, images runtimeapi.ImageServiceClient, log *slog.Logger) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.RelistPeriod == 0 {
		cfg.RelistPeriod = time.Second
	}
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = 10 * time.Second
	}
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = "cluster.local"
	}
	if cfg.Sysctls == nil {
		cfg.Sysctls = DefaultSysctlAllowlist()
	}
	if cfg.AppArmor == nil {
		cfg.AppArmor = apparmor.NewValidator()
	}
	m := &Manager{
		cfg: cfg, client: client, rt: rt, images: images, log: log,
		backoff: newBackoff(cfg.Clock), clock: cfg.Clock, tokens: newTokenCache(),
		userns: newUsernsRanges(filepath.Join(cfg.DataDir, "pods")), workers: map[types.UID]*worker{},
		sysctls: cfg.Sysctls, appArmor: cfg.AppArmor,
	}
	m.prober = newProber(m)
	m.allocs = newAllocations(m.podDir)
	m.runtimeClasses = runtimeclass.NewManager(client)
	return m
}

// Run watches the node's pods and runs them until ctx ends. Stopping the
// Manager leaves the pods' containers running: the next Manager carries on
// from the runtime.
func (m *Manager) Run(ctx context.Context) error {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	m.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "berth-agent", Host: m.cfg.NodeName})

	factory := informers.NewSharedInformerFactoryWithOptions(m.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", m.cfg.NodeName).String()
		}))
	m.startRuntimeClasses(ctx)
	// The kubelet's own manager: it starts its informer over every
	// bundle at the first pod that projects one, and stops it with ctx.
	m.trustBundles = clustertrustbundle.NewLazyInformerManager(ctx, m.client, 2*node.MaxPods)
	services, waitServices := watchServices(ctx, m.client)
	m.services = services
	defer waitServices()
	inf := factory.Core().V1().Pods().Informer()
	m.store = inf.GetStore()
	defer m.startPodCertificates(ctx, factory)()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.podChanged(ctx, obj) },
		UpdateFunc: func(_, obj any) { m.podChanged(ctx, obj) },
		DeleteFunc: func(obj any) { m.podGone(ctx, obj) },
	})
	if err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	factory.Start(ctx.Done())
	// On the way out, the informer (and so its handlers, which start
	// workers) stops before the workers are waited for.
	defer m.wg.Wait()
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced) {
		return nil // stopped before the first list completed: a clean shutdown
	}
	m.log.Info("pod informer synced", "node", m.cfg.NodeName)
	m.synced.Store(&m.store)
	defer m.synced.Store(nil)
	relist := &relister{m: m}
	relist.run(ctx) // returns when ctx ends
	return nil
}

func (m *Manager) podChanged(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	m.podCerts.TrackPod(ctx, pod)
	m.workerFor(ctx, pod.UID).update(pod)
}

func (m *Manager) podGone(ctx context.Context, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		m.podCerts.ForgetPod(ctx, pod)
		m.workerFor(ctx, pod.UID).update(nil)
	}
}

// wake nudges the worker of uid, starting one if the runtime has a pod the
// API does not (an orphan to clean up).
func (m *Manager) wake(ctx context.Context, uid types.UID) {
	m.workerFor(ctx, uid).poke()
}

// workerFor returns uid's worker, starting it if needed.
func (m *Manager) workerFor(ctx context.Context, uid types.UID) *worker {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.workers[uid]; ok {
		return w
	}
	w := newWorker(m, uid)
	if ctx.Err() != nil {
		return w // shutting down: a worker that never runs
	}
	m.workers[uid] = w
	m.wg.Add(1)
	m.cfg.Metrics.workerStarted()
	go func() {
		defer m.wg.Done()
		defer m.cfg.Metrics.workerStopped()
		w.run(ctx)
		m.mu.Lock()
		delete(m.workers, uid)
		m.mu.Unlock()
	}()
	return w
}

func (m *Manager) event(pod *corev1.Pod, eventType, reason, message string) {
	if m.recorder != nil && pod != nil {
		m.recorder.Event(pod, eventType, reason, message)
	}
}

// Pods returns the pods bound to this node as the agent's informer last saw
// them (shared objects: callers must not modify them), and false until the
// informer's first list has completed, when an empty answer would wrongly
// mean "no pods".
func (m *Manager) Pods() ([]*corev1.Pod, bool) {
	store := m.synced.Load()
	if store == nil {
		return nil, false
	}
	objs := (*store).List()
	out := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if p, ok := obj.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out, true
}
