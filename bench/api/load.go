package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/bench/internal/ticker"
	"github.com/berth/berth/internal/testkit/nodewait"
)

// shape is one benchmark size.
type shape struct {
	name                 string
	nodes, pods, clients int
}

var shapes = map[string]shape{
	"small": {name: "small", nodes: 100, pods: 3000, clients: 32},
	"large": {name: "large", nodes: 1000, pods: 10000, clients: 64},
}

// listRepeats is how many full LISTs are timed; the median is reported.
const listRepeats = 3

// measure runs the whole workload of s against t: register nodes and
// start their watchers, then create, list, status-patch and delete pods.
func measure(ctx context.Context, t *target, s shape, log *slog.Logger, profileDir string) (*result, error) {
	r := &result{target: t.name}
	var err error
	if r.memStarted, err = t.memory(); err != nil {
		return nil, err
	}
	cfg := loadConfig(t.config)
	clients, err := clientsets(cfg, s.clients)
	if err != nil {
		return nil, err
	}
	if err := setUp(ctx, clients[0]); err != nil {
		return nil, err
	}
	log.Info("registering nodes", "nodes", s.nodes)
	leases, err := registerNodes(ctx, clients, s.nodes)
	if err != nil {
		return nil, err
	}
	stopHeartbeats := heartbeat(ctx, clients, leases, log)
	defer stopHeartbeats()
	if t.bindChecksTaints {
		log.Info("waiting for the node lifecycle controller to lift the nodes' not-ready taints")
		if err := nodewait.Untainted(ctx, clients[0], 2*time.Minute); err != nil {
			return nil, err
		}
	}
	log.Info("starting node watchers", "watchers", s.nodes)
	w, err := startNodeWatchers(ctx, cfg, s.nodes, s.pods)
	if err != nil {
		return nil, err
	}
	defer w.close()

	log.Info("creating pods", "pods", s.pods, "clients", s.clients)
	prof := newProfiler(t, profileDir, s.name, log)
	profiled := prof.createPhase(ctx)
	cpuBefore, err := t.cpuTime()
	if err != nil {
		return nil, err
	}
	loadBefore, err := selfCPUTime()
	if err != nil {
		return nil, err
	}
	create := createPods(ctx, clients, w, s)
	cpuAfter, err := t.cpuTime()
	if err != nil {
		return nil, err
	}
	loadAfter, err := selfCPUTime()
	if err != nil {
		return nil, err
	}
	<-profiled
	if err := create.check("create pods", log); err != nil {
		return nil, err
	}
	r.createPerSec, r.failedCreates = create.rate(), create.failed
	r.cpuPerCreate = (cpuAfter - cpuBefore) / time.Duration(max(create.ok, 1))
	r.loadCPUPerCreate = (loadAfter - loadBefore) / time.Duration(max(create.ok, 1))
	waitUntil(ctx, t, 2*time.Minute, func() bool { return w.missing() == 0 })
	latencies := w.latencies()
	r.watchP50, r.watchP99 = percentile(latencies, 50), percentile(latencies, 99)
	r.missedAdds, r.misdelivered = int64(w.missing()), w.misdelivered.Load()
	log.Info("listing pods", "repeats", listRepeats)
	if r.list, err = timeList(ctx, clients[0], create.ok); err != nil {
		return nil, err
	}
	if r.memLoaded, err = t.memory(); err != nil {
		return nil, err
	}
	prof.heap(ctx)

	log.Info("patching pod status")
	status := patchPodStatuses(ctx, clients, s.pods)
	if err := status.check("patch pod status", log); err != nil {
		return nil, err
	}
	r.statusPerSec, r.failedPatches = status.rate(), status.failed
	log.Info("deleting pods")
	del := deletePods(ctx, clients, s.pods)
	if err := del.check("delete pods", log); err != nil {
		return nil, err
	}
	r.deletePerSec, r.failedDeletes = del.rate(), del.failed
	waitUntil(ctx, t, 2*time.Minute, func() bool { return w.nDeleted.Load() >= int64(del.ok) })
	if got := w.nDeleted.Load(); got < int64(del.ok) {
		log.Warn("node watchers missed deletions", "seen", got, "want", del.ok)
	}
	if r.memEnd, err = t.memory(); err != nil {
		return nil, err
	}
	if err := measurePaced(ctx, t, s, clients, w, r, log); err != nil {
		return nil, err
	}
	return r, t.failed()
}

// measurePaced times watch delivery of pods created at pacedRate, on the
// cluster the deletes emptied.
func measurePaced(ctx context.Context, t *target, s shape, clients []kubernetes.Interface, w *nodeWatchers, r *result, log *slog.Logger) error {
	log.Info("creating pods at a fixed rate", "pods", pacedPods, "perSecond", pacedRate)
	w.forget()
	paced := createPodsPaced(ctx, clients, w, s, pacedPods, pacedRate)
	if err := paced.check("paced creates", log); err != nil {
		return err
	}
	waitUntil(ctx, t, 2*time.Minute, func() bool { return w.missing() == 0 })
	latencies := w.latencies()
	r.pacedP50, r.pacedP99 = percentile(latencies, 50), percentile(latencies, 99)
	if missing := w.missing(); missing > 0 {
		log.Warn("node watchers missed paced creates", "missing", missing)
		r.missedAdds += int64(missing)
	}
	return nil
}

// createPods creates s.pods pods, bound round-robin to the nodes, noting
// each create call's start for the watchers (and forgetting it if the call
// failed).
func createPods(ctx context.Context, clients []kubernetes.Interface, w *nodeWatchers, s shape) phase {
	return forEachPod(ctx, clients, s.pods, func(ctx context.Context, cs kubernetes.Interface, i int) error {
		return createTimed(ctx, cs, w, s, i)
	})
}

// createTimed creates pod i, noting its create call's start for the
// watchers and forgetting it if the call failed.
func createTimed(ctx context.Context, cs kubernetes.Interface, w *nodeWatchers, s shape, i int) error {
	w.created[i].Store(time.Now().UnixNano())
	_, err := cs.CoreV1().Pods(benchNamespace).Create(ctx, benchPod(i, s.nodes), metav1.CreateOptions{})
	if err != nil {
		w.created[i].Store(0)
	}
	return err
}

// patchPodStatuses reports every pod Running, as its kubelet would.
func patchPodStatuses(ctx context.Context, clients []kubernetes.Interface, pods int) phase {
	return forEachPod(ctx, clients, pods, func(ctx context.Context, cs kubernetes.Interface, i int) error {
		_, err := cs.CoreV1().Pods(benchNamespace).Patch(ctx, podName(i), types.StrategicMergePatchType,
			runningStatusPatch(i), metav1.PatchOptions{}, "status")
		return err
	})
}

// deletePods deletes every pod at once (grace period 0, as after the
// kubelet has stopped it).
func deletePods(ctx context.Context, clients []kubernetes.Interface, pods int) phase {
	zero := int64(0)
	return forEachPod(ctx, clients, pods, func(ctx context.Context, cs kubernetes.Interface, i int) error {
		return cs.CoreV1().Pods(benchNamespace).Delete(ctx, podName(i), metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
}

// setUp creates the benchmark namespace and its default ServiceAccount
// (no controller-manager runs to create it, and upstream's ServiceAccount
// admission refuses pods without it).
func setUp(ctx context.Context, cs kubernetes.Interface) error {
	// Both servers evaluate the same Pod Security level for every pod:
	// kube-apiserver's default policy is privileged and berth's warns at
	// restricted, which would add a warning per create to berth's side only.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "baseline",
		"pod-security.kubernetes.io/audit": "baseline",
	}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace: %w", err)
	}
	for _, n := range []string{benchNamespace, metav1.NamespaceDefault} {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: n}}
		if _, err := cs.CoreV1().ServiceAccounts(n).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create service account %s/default: %w", n, err)
		}
	}
	return nil
}

// clientsets returns n clients, each on its own connection, as n
// independent API clients would be.
func clientsets(cfg *rest.Config, n int) ([]kubernetes.Interface, error) {
	out := make([]kubernetes.Interface, n)
	for i := range out {
		c := rest.CopyConfig(cfg)
		c.Proxy = noProxy
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			return nil, err
		}
		out[i] = cs
	}
	return out, nil
}

// phase is the outcome of one batch of requests.
type phase struct {
	elapsed    time.Duration
	ok, failed int
	firstErr   error
}

func (p phase) rate() float64 { return perSecond(p.ok, p.elapsed) }

// check logs failed requests, and fails the benchmark when more than a
// tenth failed: then the server is broken, not slow.
func (p phase) check(what string, log *slog.Logger) error {
	if p.failed == 0 {
		return nil
	}
	if p.failed*10 > p.ok+p.failed {
		return fmt.Errorf("%s: %d of %d requests failed, the first with: %w", what, p.failed, p.ok+p.failed, p.firstErr)
	}
	log.Warn("requests failed", "phase", what, "failed", p.failed, "of", p.ok+p.failed, "first", p.firstErr)
	return nil
}

// forEachPod calls fn for [0,n), client k taking every len(clients)-th
// index from k. A failed call is counted and the batch goes on: a loaded
// server's errors are a figure to report, not a reason to stop.
func forEachPod(ctx context.Context, clients []kubernetes.Interface, n int, fn func(context.Context, kubernetes.Interface, int) error) phase {
	var (
		wg     sync.WaitGroup
		failed tally
	)
	begin := time.Now()
	for k, cs := range clients {
		wg.Go(func() {
			for i := k; i < n && ctx.Err() == nil; i += len(clients) {
				failed.add(fn(ctx, cs, i))
			}
		})
	}
	wg.Wait()
	return failed.phase(ctx, n, begin)
}

// tally counts a batch's failed requests; its methods are safe for
// concurrent use.
type tally struct {
	mu       sync.Mutex
	failed   int
	firstErr error
}

// add counts err, if not nil.
func (t *tally) add(err error) {
	if err == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed++
	t.firstErr = cmp.Or(t.firstErr, err)
}

// phase is the outcome of a batch of n requests begun at begin: all of
// them failed if ctx ended first.
func (t *tally) phase(ctx context.Context, n int, begin time.Time) phase {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ctx.Err() != nil {
		return phase{elapsed: time.Since(begin), failed: n, firstErr: ctx.Err()}
	}
	return phase{elapsed: time.Since(begin), ok: n - t.failed, failed: t.failed, firstErr: t.firstErr}
}

// registerNodes creates the Node objects and their Leases.
func registerNodes(ctx context.Context, clients []kubernetes.Interface, nodes int) ([]*coordinationv1.Lease, error) {
	leases := make([]*coordinationv1.Lease, nodes)
	p := forEachPod(ctx, clients, nodes, func(ctx context.Context, cs kubernetes.Interface, i int) error {
		if _, err := cs.CoreV1().Nodes().Create(ctx, benchNode(i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create node: %w", err)
		}
		name, now, period := nodeName(i), metav1.NewMicroTime(time.Now()), int32(40)
		lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &period, RenewTime: &now},
		}, metav1.CreateOptions{})
		leases[i] = lease
		if err != nil {
			return fmt.Errorf("create lease: %w", err)
		}
		return nil
	})
	if p.failed > 0 {
		return nil, p.firstErr
	}
	return leases, nil
}

// heartbeat renews every node's Lease each 10 s, as agents do, so a node
// lifecycle controller keeps the nodes Ready (berth runs one; the peer has
// none, but bears the same writes). It stops when the returned func is called.
func heartbeat(ctx context.Context, clients []kubernetes.Interface, leases []*coordinationv1.Lease, log *slog.Logger) (stop func()) {
	return ticker.Every(ctx, 10*time.Second, func(ctx context.Context) {
		p := forEachPod(ctx, clients[:min(4, len(clients))], len(leases), func(ctx context.Context, cs kubernetes.Interface, i int) error {
			lease := leases[i].DeepCopy()
			now := metav1.NewMicroTime(time.Now())
			lease.Spec.RenewTime = &now
			updated, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, lease, metav1.UpdateOptions{})
			if err == nil {
				leases[i] = updated
			}
			return err
		})
		if p.failed > 0 && ctx.Err() == nil {
			log.Warn("lease renewals failed", "failed", p.failed, "first", p.firstErr)
		}
	})
}

// timeList times listRepeats full LISTs of all pods and returns the median,
// checking that each returns at least the want pods whose creation succeeded.
func timeList(ctx context.Context, cs kubernetes.Interface, want int) (time.Duration, error) {
	var samples []time.Duration
	for range listRepeats {
		begin := time.Now()
		list, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, fmt.Errorf("list pods: %w", err)
		}
		samples = append(samples, time.Since(begin))
		if len(list.Items) < want {
			return 0, fmt.Errorf("list returned %d pods, want at least %d", len(list.Items), want)
		}
	}
	return percentile(samples, 50), nil
}
