// Package scheduler assigns pods to nodes using only the Kubernetes API, as
// system:kube-scheduler, through client-go informers. Its decisions are
// proposals: the API server's bind transaction re-checks every node
// constraint (internal/fit) atomically, so two schedulers, or a scheduler and
// a stale cache, can never overcommit a node; a 409 just sends the pod back
// to the queue.
package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/berth/berth/internal/informeropts"
)

// DefaultName is the schedulerName pods get by default.
const DefaultName = "default-scheduler"

// Back-off for pods that could not be placed, as kube-scheduler's defaults:
// 1 s doubling to 10 s between attempts, and a retry at least every 5
// minutes even when no cluster event suggests it might now fit.
const (
	initialBackoff     = time.Second
	maxBackoff         = 10 * time.Second
	unschedulableRetry = 5 * time.Minute
)

// defaultBindWorkers is how many bindings may be in flight. A bind is a
// round trip to the API server and one etcd transaction, mostly waiting:
// kube-scheduler binds every decision in its own goroutine, unbounded. With
// 16, bench/scheduler's binds fell behind its 64 pod creators and pods
// waited minutes to be bound; 128 kept pace in two before/after pairs. 512
// did better in one run and worse in the next on this shared machine, so
// 128 stays until a quieter measurement decides. The bound remains so that
// a stalled API server cannot pile up goroutines and HTTP/2 streams.
const defaultBindWorkers = 128

// Config configures a Scheduler.
type Config struct {
	Client kubernetes.Interface
	// Name is the spec.schedulerName this scheduler serves.
	Name string
	// BindWorkers bounds concurrent API calls that carry out decisions
	// (bindings, unschedulable conditions); 0 means defaultBindWorkers.
	BindWorkers int
	// InitialBackoff and MaxBackoff bound the back-off of pods that could
	// not be placed; 0 means initialBackoff and maxBackoff. Tests that
	// scale a workload down scale them down with it.
	InitialBackoff, MaxBackoff time.Duration
	Logger                     *slog.Logger
	// Pods and Nodes, when set, are where the pod and node informers list
	// and watch instead of Client (berth server's own scheduler: its watch
	// cache).
	Pods, Nodes cache.ListerWatcher
}

// Scheduler is one scheduler instance; several may run against one cluster.
type Scheduler struct {
	cfg   Config
	log   *slog.Logger
	cache *clusterCache
	queue *podQueue
	pods  corelisters.PodLister
	// namespaces resolves affinity terms that select namespaces by label.
	namespaces corelisters.NamespaceLister
	factory    informers.SharedInformerFactory
	recorder   events.EventRecorder

	mu            sync.Mutex
	unschedulable map[string]struct{}
	// clusterChanges counts the cluster events that may let a parked pod
	// fit, so that a cycle that judged a pod unschedulable before such an
	// event (but parks it after the event's retry) retries it at once
	// instead of waiting for the next event or unschedulableRetry: what
	// kube-scheduler's moveRequestCycle does.
	clusterChanges uint64
	// podWaiters are the parked pods that require pod affinity or spread
	// (waitsForPods): a pod placed anywhere may let them fit, which
	// podChanges counts.
	podWaiters map[string]struct{}
	podChanges uint64

	// handled is the resourceVersion the pod handler last processed for
	// each pending pod of this scheduler's. The informer's store runs
	// ahead of its handlers, so the sweep must not judge a pod whose
	// latest version the handler has yet to queue.
	handled map[types.UID]string

	// offset rotates where each cycle starts filtering (used only by Run's loop).
	offset int
}

// New builds a scheduler; Run starts it.
func New(cfg Config) *Scheduler {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.BindWorkers <= 0 {
		cfg.BindWorkers = defaultBindWorkers
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = initialBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = maxBackoff
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informeropts.Factory()...)
	informeropts.ReadThrough(factory, &v1.Pod{}, cfg.Pods)
	informeropts.ReadThrough(factory, &v1.Node{}, cfg.Nodes)
	pods := factory.Core().V1().Pods().Lister()
	return &Scheduler{
		cfg:           cfg,
		log:           cfg.Logger,
		cache:         newCache(),
		queue:         newPodQueue(cfg.InitialBackoff, cfg.MaxBackoff, podPriority(pods)),
		pods:          pods,
		namespaces:    factory.Core().V1().Namespaces().Lister(),
		podWaiters:    map[string]struct{}{},
		factory:       factory,
		unschedulable: map[string]struct{}{},
		handled:       map[types.UID]string{},
	}
}

// Run schedules until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: s.cfg.Client.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	s.recorder = broadcaster.NewRecorder(scheme.Scheme, s.cfg.Name)

	synced, err := s.registerHandlers()
	if err != nil {
		return err
	}
	s.factory.Start(ctx.Done())
	defer s.factory.Shutdown()
	// The handlers, not just the informers' stores, must have seen every
	// initial object: a decision made earlier would miss nodes or bound pods.
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("scheduler: informers did not sync: %w", ctx.Err())
	}
	s.log.Info("scheduler started", "name", s.cfg.Name)

	go func() {
		<-ctx.Done()
		s.queue.shutDown()
	}()
	var sweeper sync.WaitGroup
	defer sweeper.Wait()
	sweeper.Go(func() { s.sweepEvery(ctx, sweepInterval) })

	calls := make(chan struct{}, s.cfg.BindWorkers)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	for {
		d, ok := s.queue.get()
		if !ok {
			return nil
		}
		work := s.scheduleOne(d)
		if work.run == nil || !work.holdsKey {
			s.queue.done(d)
		}
		if work.run == nil {
			continue
		}
		calls <- struct{}{}
		inflight.Go(func() {
			defer func() { <-calls }()
			if work.holdsKey {
				defer s.queue.done(d)
			}
			work.run(ctx)
		})
	}
}

// registerHandlers feeds the cache and the queue from the informers and
// returns when each handler has processed the initial list.
func (s *Scheduler) registerHandlers() ([]cache.InformerSynced, error) {
	pods, err := s.factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onPod(obj.(*v1.Pod)) },
		UpdateFunc: func(_, obj any) { s.onPod(obj.(*v1.Pod)) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*v1.Pod); ok {
				s.noteHandled(pod, false)
				s.cache.forgetPod(pod.UID)
				s.retryUnschedulable()
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: pod handler: %w", err)
	}
	nodes, err := s.factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.cache.setNode(obj.(*v1.Node)); s.retryUnschedulable() },
		UpdateFunc: func(_, obj any) { s.cache.setNode(obj.(*v1.Node)); s.retryUnschedulable() },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if node, ok := obj.(*v1.Node); ok {
				s.cache.removeNode(node.Name)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: node handler: %w", err)
	}
	namespaces := s.factory.Core().V1().Namespaces().Informer()
	return []cache.InformerSynced{pods.HasSynced, nodes.HasSynced, namespaces.HasSynced}, nil
}

func (s *Scheduler) onPod(pod *v1.Pod) {
	responsible := s.responsibleFor(pod)
	defer s.noteHandled(pod, responsible)
	if pod.Spec.NodeName != "" {
		wasCounted := s.cache.isAccounted(pod.UID)
		s.cache.observePod(pod)
		if wasCounted && !counts(pod) {
			s.retryUnschedulable() // a finished pod freed room
		} else if counts(pod) {
			s.retryPodWaiters() // a placed pod may be what one requires
		}
		return
	}
	if responsible {
		s.queue.add(keyOf(pod))
	}
}

// noteHandled records that the pod handler has processed this version of
// pod (pending: it is this scheduler's to place), or forgets the pod.
func (s *Scheduler) noteHandled(pod *v1.Pod, pending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pending {
		s.handled[pod.UID] = pod.ResourceVersion
	} else {
		delete(s.handled, pod.UID)
	}
}

// handledCurrent reports whether the pod handler has processed pod's
// version, as pending.
func (s *Scheduler) handledCurrent(pod *v1.Pod) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv, ok := s.handled[pod.UID]
	return ok && rv == pod.ResourceVersion
}

func (s *Scheduler) responsibleFor(pod *v1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && pod.Spec.SchedulerName == s.cfg.Name &&
		pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
}

// retryUnschedulable moves every pod waiting for a cluster change back into
// the queue (with its back-off), because a node or a freed share may now fit it.
func (s *Scheduler) retryUnschedulable() {
	s.mu.Lock()
	keys := s.unschedulable
	s.unschedulable = map[string]struct{}{}
	s.podWaiters = map[string]struct{}{}
	s.clusterChanges++
	s.mu.Unlock()
	for k := range keys {
		s.queue.addRateLimited(k)
	}
}

// retryPodWaiters moves the parked pods that require pod affinity back
// into the queue: a pod was placed or relabelled, and may be what they need.
func (s *Scheduler) retryPodWaiters() {
	s.mu.Lock()
	s.podChanges++
	if len(s.podWaiters) == 0 {
		s.mu.Unlock()
		return
	}
	keys := s.podWaiters
	s.podWaiters = map[string]struct{}{}
	for k := range keys {
		delete(s.unschedulable, k)
	}
	s.mu.Unlock()
	for k := range keys {
		s.queue.addRateLimited(k)
	}
}

// generation counts the events that may let a parked pod fit.
type generation struct{ cluster, pods uint64 }

// clusterGeneration is read by a cycle before it looks at the cache (the
// handlers update the cache before counting the change).
func (s *Scheduler) clusterGeneration() generation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return generation{cluster: s.clusterChanges, pods: s.podChanges}
}

// waitsForPods reports whether a pod placed anywhere may let pod fit: it
// requires pods somewhere, or must spread evenly (a pod placed in the
// emptiest domain raises the minimum).
func waitsForPods(pod *v1.Pod) bool {
	if len(requiredAffinity(pod)) > 0 {
		return true
	}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == v1.DoNotSchedule {
			return true
		}
	}
	return false
}

// namespaceLabels is the labels of namespace name as the informer last saw them.
func (s *Scheduler) namespaceLabels(name string) labels.Set {
	ns, err := s.namespaces.Get(name)
	if err != nil {
		return nil
	}
	return ns.Labels
}

func keyOf(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// podPriority reads a queued pod's spec.priority (0 when unset or when the
// pod is already gone: it will be dropped when handed out).
func podPriority(pods corelisters.PodLister) func(key string) int32 {
	return func(key string) int32 {
		ns, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			return 0
		}
		pod, err := pods.Pods(ns).Get(name)
		if err != nil || pod.Spec.Priority == nil {
			return 0
		}
		return *pod.Spec.Priority
	}
}
