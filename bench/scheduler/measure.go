package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// measurement is one scheduler's run over a batch of pods.
type measurement struct {
	load          string // the machine's 1-minute load average around the run
	elapsed       time.Duration
	latencies     []time.Duration // sorted
	revisionDelta int64           // store revisions during the run, lease renewals excluded
}

func (m measurement) podsPerSecond() float64 { return float64(len(m.latencies)) / m.elapsed.Seconds() }

func (m measurement) quantile(p float64) time.Duration {
	return m.latencies[int(p*float64(len(m.latencies)-1))].Round(time.Millisecond)
}

func (m measurement) writesPerPod() float64 {
	return float64(m.revisionDelta) / float64(len(m.latencies))
}

// markdown reports the median of runs by pods/s, and every run's rate.
func markdown(o options, runs []measurement) string {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b measurement) int { return cmp.Compare(a.podsPerSecond(), b.podsPerSecond()) })
	m := sorted[len(sorted)/2]
	rates := make([]string, len(runs))
	for i, r := range runs {
		rates[i] = fmt.Sprintf("%.0f", r.podsPerSecond())
	}
	command := fmt.Sprintf("go run ./bench/scheduler -nodes %d -pods %d -clients %d", o.nodes, o.pods, o.clients)
	which := "one run"
	if len(runs) > 1 {
		command += fmt.Sprintf(" -runs %d", len(runs))
		which = fmt.Sprintf("the median of %d runs, each on a fresh server (pods/s in order: %s)", len(runs), strings.Join(rates, ", "))
	}
	return fmt.Sprintf(`## Scheduler: creation to bound (bench/scheduler)

`+"`%s`"+`, measured %s on this machine
(2 cores shared by the server, its embedded etcd, the scheduler and the load generator;
1-minute load average %s: other work on the machine competes for the cores). Figures of %s.

| figure | value |
| --- | --- |
| pods/s, first creation to last bound | %.0f |
| time to bind, p50 | %s |
| time to bind, p99 | %s |
| store writes per scheduled pod (create + bind transaction + Scheduled event; lease renewals excluded) | %.2f |
| store transactions per bind | 1 |

Each bind is one etcd transaction (node guard, node usage record, pod): the writes per pod above
are the pod's create, that transaction, and the scheduler's Scheduled event. Nodes renew their
Leases every 10 s during the run, as agents do. Target: 1000 pods/s;
kube-scheduler's scheduler_perf threshold for 5000 nodes and 10k pods is 270 pods/s.
`, command, time.Now().UTC().Format("2006-01-02"), m.load, which,
		m.podsPerSecond(), m.quantile(0.5), m.quantile(0.99), m.writesPerPod())
}

// sideBySideMarkdown reports -peer mode: berth's scheduler and kube-scheduler.
func sideBySideMarkdown(o options, berth, kube measurement) string {
	row := func(figure, format string, f func(measurement) any) string {
		return fmt.Sprintf("| %s | "+format+" | "+format+" |\n", figure, f(berth), f(kube))
	}
	return fmt.Sprintf(`## Scheduler beside kube-scheduler (bench/scheduler -peer kube-scheduler)

`+"`go run ./bench/scheduler -nodes %d -pods %d -clients %d -peer kube-scheduler`"+` (kube-scheduler built by
`+"`hack/build-bench-peers.sh kube-scheduler`"+`), measured %s on this machine. One berth server
(`+"`--disable-scheduler`"+`, embedded etcd, in the bench's process) with %d Nodes; first berth's scheduler
(internal/scheduler, in the bench's process), then kube-scheduler (a child process), each on its own
%d pods in its own namespace, the other scheduler stopped; the first batch stays bound during the second.

| figure | berth scheduler | kube-scheduler v1.37.2 |
| --- | --- | --- |
`, o.nodes, o.pods, o.clients, time.Now().UTC().Format("2006-01-02"), o.nodes, o.pods) +
		row("pods/s, first creation to last bound", "%.0f", func(m measurement) any { return m.podsPerSecond() }) +
		row("time to bind, p50", "%s", func(m measurement) any { return m.quantile(0.5) }) +
		row("time to bind, p99", "%s", func(m measurement) any { return m.quantile(0.99) }) +
		row("store writes per scheduled pod (lease renewals excluded)", "%.2f", func(m measurement) any { return m.writesPerPod() }) +
		row("1-minute load average", "%s", func(m measurement) any { return m.load }) + `
Both schedulers act as system:kube-scheduler with the client limits berth server gives its own
components (QPS 5000, burst 10000) and reach berth's HTTPS API directly with the
system:kube-scheduler certificate. kube-scheduler runs unchanged with its default profile (every
default plugin, including the volume, DRA, preemption and topology-spread ones), with leader
election off; what it lists and watches besides pods and nodes (persistent volumes and claims,
storage.k8s.io, resource.k8s.io, services, workload controllers, PodDisruptionBudgets) was empty in
these runs. The machine is shared: compare the two columns of one run, not runs of
different days.
`
}

// measurePhase creates n pods in namespace with workers concurrent clients
// and measures them from creation to bound; leaseWrites counts the
// heartbeats' store writes, which are not the scheduler's.
func measurePhase(ctx context.Context, cs kubernetes.Interface, namespace string, n, workers int, leaseWrites *atomic.Int64) (measurement, error) {
	leasesBefore, loadBefore := leaseWrites.Load(), loadAverage()
	m, err := schedulePods(ctx, cs, namespace, n, workers)
	if err != nil {
		return measurement{}, err
	}
	m.load = fmt.Sprintf("%s at the start, %s at the end", loadBefore, loadAverage())
	m.revisionDelta -= leaseWrites.Load() - leasesBefore
	return m, nil
}

// benchPod is the pod every phase creates: one container with requests.
func benchPod(namespace, name string) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: req},
	}}}}
}

// loadAverage is the 1-minute load average from /proc/loadavg ("?" when unreadable).
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return "?"
	}
	return fields[0]
}

// startCPUProfile profiles this process (the whole server runs in it) until
// the returned stop is called, which also writes the allocations made since
// the process started to path+".allocs"; path "" profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if err := writeAllocsProfile(path + ".allocs"); err != nil {
			fmt.Fprintln(os.Stderr, "bench/scheduler:", err)
		}
	}, nil
}

func writeAllocsProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("allocs profile: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return fmt.Errorf("allocs profile: %w", err)
	}
	return nil
}

// schedulePods creates pods pod-0..pod-(n-1) in namespace and waits until
// all are bound; other pods there (a warm-up) are not counted.
func schedulePods(ctx context.Context, cs kubernetes.Interface, namespace string, n, workers int) (measurement, error) {
	startRev, err := currentRevision(ctx, cs)
	if err != nil {
		return measurement{}, err
	}
	// An informer, not a bare watch: if the server cuts this watcher off
	// (a slow consumer) it resumes or re-lists, so no binding goes unseen.
	var mu sync.Mutex
	created := make(map[string]time.Time, n)
	bound := make(map[string]time.Time, n)
	allBound := make(chan struct{})
	observe := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ours := created[pod.Name]; !ours {
			return
		}
		if _, seen := bound[pod.Name]; !seen {
			bound[pod.Name] = time.Now()
			if len(bound) == n {
				close(allBound)
			}
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace))
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return measurement{}, err
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	begin := time.Now()
	err = parallel(n, workers, func(i int) error {
		name := "pod-" + strconv.Itoa(i)
		pod := benchPod(namespace, name)
		mu.Lock()
		created[name] = time.Now()
		mu.Unlock()
		return createPod(ctx, cs, pod)
	})
	if err != nil {
		return measurement{}, err
	}
	select {
	case <-allBound:
	case <-time.After(10 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		return measurement{}, fmt.Errorf("only %d of %d pods bound within 10 minutes", len(bound), n)
	}
	endRev, err := currentRevision(ctx, cs)
	if err != nil {
		return measurement{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	m := measurement{revisionDelta: endRev - startRev}
	var last time.Time
	for name, b := range bound {
		m.latencies = append(m.latencies, b.Sub(created[name]))
		if b.After(last) {
			last = b
		}
	}
	m.elapsed = last.Sub(begin)
	slices.Sort(m.latencies)
	return m, nil
}

// createPod creates pod, retrying what a loaded machine makes the store
// answer (an etcd request timeout surfaces as 500, or 504): the load
// generator must not end a run the server survives. A retry that finds the
// pod already there means the timed-out attempt was committed after all.
func createPod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		_, err = cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		switch {
		case err == nil, attempt > 0 && apierrors.IsAlreadyExists(err):
			return nil
		case !apierrors.IsInternalError(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err):
			return err
		}
	}
	return err
}
