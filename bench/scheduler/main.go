// Command scheduler measures berth's scheduling path end to end: N nodes
// and M pods against a real `berth server` (embedded etcd, API server,
// scheduler, atomic binding), reporting pods/s from creation to bound, the
// p50/p99 time to bind, and store writes per scheduled pod. It writes its
// figures into docs/benchmarks.md. Run: go run ./bench/scheduler
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/bench/internal/report"
	"github.com/berth/berth/bench/internal/ticker"
	"github.com/berth/berth/internal/server"
)

func main() {
	nodes := flag.Int("nodes", 1000, "Node objects")
	pods := flag.Int("pods", 10000, "pods to schedule")
	clients := flag.Int("clients", 64, "concurrent pod creators")
	out := flag.String("out", "docs/benchmarks.md", "report file (empty: print only)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the scheduling phase (server, scheduler and load generator share this process) to this file")
	flag.Parse()
	if err := run(*nodes, *pods, *clients, *out, *cpuProfile); err != nil {
		fmt.Fprintln(os.Stderr, "bench/scheduler:", err)
		os.Exit(1)
	}
}

func run(nodes, pods, clients int, out, cpuProfile string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "berth-bench-scheduler")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{DataDir: dir, BindAddress: "127.0.0.1", Port: port, DisableAgent: true,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	}()
	cs, err := waitForServer(ctx, filepath.Join(dir, "admin.kubeconfig"), done)
	if err != nil {
		return err
	}
	if err := createNodes(ctx, cs, nodes, clients); err != nil {
		return err
	}
	// Nodes heartbeat as agents would (a Lease renewed every 10 s), so the
	// node lifecycle controller keeps them Ready through the run.
	var leaseWrites atomic.Int64
	heartbeats, err := startHeartbeats(ctx, cs, nodes, clients, &leaseWrites)
	if err != nil {
		return err
	}
	defer heartbeats()
	leaseWritesBefore := leaseWrites.Load()
	stopProfile, err := startCPUProfile(cpuProfile)
	if err != nil {
		return err
	}
	loadBefore := loadAverage()
	m, err := schedulePods(ctx, cs, pods, clients)
	stopProfile()
	if err != nil {
		return err
	}
	m.load = fmt.Sprintf("%s at the start, %s at the end", loadBefore, loadAverage())
	m.revisionDelta -= leaseWrites.Load() - leaseWritesBefore
	body := m.markdown(nodes, pods, clients)
	fmt.Print(body)
	if out != "" {
		if err := report.Write(out, "scheduler", body); err != nil {
			return err
		}
	}
	cancel()
	return <-done
}

type measurement struct {
	load          string // the machine's 1-minute load average around the run
	elapsed       time.Duration
	latencies     []time.Duration
	revisionDelta int64
}

func (m measurement) markdown(nodes, pods, clients int) string {
	slices.Sort(m.latencies)
	q := func(p float64) time.Duration { return m.latencies[int(p*float64(len(m.latencies)-1))] }
	return fmt.Sprintf(`## Scheduler: creation to bound (bench/scheduler)

`+"`go run ./bench/scheduler -nodes %d -pods %d -clients %d`"+`, measured %s on this machine
(2 cores shared by the server, its embedded etcd, the scheduler and the load generator;
1-minute load average %s: other work on the machine competes for the cores).

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
`, nodes, pods, clients, time.Now().UTC().Format("2006-01-02"), m.load,
		float64(len(m.latencies))/m.elapsed.Seconds(), q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond),
		float64(m.revisionDelta)/float64(len(m.latencies)))
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
// the returned stop is called; path "" profiles nothing.
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
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitForServer(ctx context.Context, kubeconfig string, done <-chan error) (*kubernetes.Clientset, error) {
	var cs *kubernetes.Clientset
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("server exited: %v", err)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil
		}
		cfg.QPS, cfg.Burst = 100000, 100000
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		if cs, err = kubernetes.NewForConfig(cfg); err != nil {
			return false, err
		}
		_, err = cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return cs, err
}

// parallel runs fn(i) for i in [0,n) on workers goroutines.
func parallel(n, workers int, fn func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for i := 0; i < n && first == nil; i++ {
		select {
		case next <- i:
		case first = <-errs:
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		select {
		case first = <-errs:
		default:
		}
	}
	return first
}

func createNodes(ctx context.Context, cs kubernetes.Interface, n, workers int) error {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return parallel(n, workers, func(i int) error {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + strconv.Itoa(i)}, Status: corev1.NodeStatus{
			Allocatable: alloc, Capacity: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		}}
		_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		return err
	})
}

// startHeartbeats creates each node's Lease and renews them all every 10 s
// until the returned stop is called.
func startHeartbeats(ctx context.Context, cs kubernetes.Interface, n, workers int, writes *atomic.Int64) (stop func(), err error) {
	renew := func(i int) error {
		name := "node-" + strconv.Itoa(i)
		now := metav1.NewMicroTime(time.Now())
		leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
		lease, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &now}}, metav1.CreateOptions{})
			return err
		}
		lease.Spec.RenewTime = &now
		if _, err = leases.Update(ctx, lease, metav1.UpdateOptions{}); err == nil {
			writes.Add(1)
		}
		return err
	}
	if err := parallel(n, workers, renew); err != nil {
		return nil, err
	}
	return ticker.Every(ctx, 10*time.Second, func(context.Context) {
		_ = parallel(n, workers, renew) // a missed beat is retried on the next tick
	}), nil
}

func currentRevision(ctx context.Context, cs kubernetes.Interface) (int64, error) {
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(list.ResourceVersion, 10, 64)
}

func schedulePods(ctx context.Context, cs kubernetes.Interface, n, workers int) (measurement, error) {
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
		if _, seen := bound[pod.Name]; !seen {
			bound[pod.Name] = time.Now()
			if len(bound) == n {
				close(allBound)
			}
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
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
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	err = parallel(n, workers, func(i int) error {
		name := "pod-" + strconv.Itoa(i)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: req},
		}}}}
		mu.Lock()
		created[name] = time.Now()
		mu.Unlock()
		_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return measurement{}, err
	}
	select {
	case <-allBound:
	case <-time.After(10 * time.Minute):
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
	return m, nil
}
