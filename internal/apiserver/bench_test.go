package apiserver

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// The benchmarks drive the server through client-go (protobuf) over
// loopback HTTP into embedded etcd, with pods shaped as bench/api's (one
// container with requests, bound to one of benchNodes nodes). No assertion
// on time: the figures are for comparing runs.

const benchNodes = 100

// processCPU is the CPU time (user and system) the test process has used:
// client, server and embedded etcd together, the figure to compare between
// runs on a shared machine where wall-clock rates swing.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureCPU resets the timer and returns a function that reports the CPU
// time per operation since.
func measureCPU(b *testing.B) func() {
	b.ResetTimer()
	start := processCPU(b)
	return func() { b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op") }
}

func benchNodeName(i int) string { return fmt.Sprintf("node-%04d", i%benchNodes) }

// benchPod is bench/api's pod i; nodeName "" leaves it unscheduled.
func benchPod(i int, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%06d", i), Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			NodeName: nodeName,
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resourceQuantity("10m"), corev1.ResourceMemory: resourceQuantity("16Mi"),
				}},
			}},
		},
	}
}

// newBenchServer is a test server with benchNodes nodes roomy enough for
// every pod a benchmark creates.
func newBenchServer(b *testing.B) *testServer {
	s := newTestServer(b)
	for i := 0; i < benchNodes; i++ {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: benchNodeName(i)}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resourceQuantity("10000"), corev1.ResourceMemory: resourceQuantity("10Ti"), corev1.ResourcePods: resourceQuantity("100000"),
		}}}
		if _, err := s.client.CoreV1().Nodes().Create(testContext(b), node, metav1.CreateOptions{}); err != nil {
			b.Fatalf("create node: %v", err)
		}
	}
	return s
}

// createBenchPods creates pods [from, to) with 16 clients in parallel.
func createBenchPods(ctx context.Context, s *testServer, from, to int, bound bool) error {
	var next atomic.Int64
	next.Store(int64(from))
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		go func() {
			for i := int(next.Add(1) - 1); i < to; i = int(next.Add(1) - 1) {
				node := ""
				if bound {
					node = benchNodeName(i)
				}
				if _, err := s.client.CoreV1().Pods("default").Create(ctx, benchPod(i, node), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for w := 0; w < 16; w++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// BenchmarkCreatePod measures creating bound pods with 16 clients per CPU
// (32 on two cores, as bench/api's small shape); it reports pods/s.
func BenchmarkCreatePod(b *testing.B) {
	runPodOps(b, podsNone, "pods/s", func(ctx context.Context, pods typedcorev1.PodInterface, i int) error {
		_, err := pods.Create(ctx, benchPod(i, benchNodeName(i)), metav1.CreateOptions{})
		return err
	})
}

// Which pods a benchmark of runPodOps finds before it starts.
const (
	podsNone    = iota // none
	podsPending        // b.N unscheduled pods
	podsBound          // b.N pods bound to the bench nodes
)

// runPodOps runs op for pods 0..b.N-1 from 16 clients per CPU after
// creating the pods it needs, and reports process CPU and ops/s as unit.
func runPodOps(b *testing.B, existing int, unit string, op func(context.Context, typedcorev1.PodInterface, int) error) {
	s := newBenchServer(b)
	ctx := testContext(b)
	if existing != podsNone {
		if err := createBenchPods(ctx, s, 0, b.N, existing == podsBound); err != nil {
			b.Fatal(err)
		}
	}
	pods := s.client.CoreV1().Pods("default")
	var n atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	defer measureCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(ctx, pods, int(n.Add(1)-1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}

// BenchmarkBindPod measures pods/binding of unscheduled pods, as the
// scheduler posts it.
func BenchmarkBindPod(b *testing.B) {
	runPodOps(b, podsPending, "binds/s", func(ctx context.Context, pods typedcorev1.PodInterface, i int) error {
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: benchPod(i, "").Name}, Target: corev1.ObjectReference{Kind: "Node", Name: benchNodeName(i)}}
		return pods.Bind(ctx, binding, metav1.CreateOptions{})
	})
}

// runningStatusPatch is the strategic merge patch a node agent sends once
// pod i's container runs (bench/api's).
func runningStatusPatch(i int) []byte {
	now := metav1.Now().UTC().Format("2006-01-02T15:04:05Z")
	ip := fmt.Sprintf("10.%d.%d.%d", 128+i>>16, i>>8&255, i&255)
	return fmt.Appendf(nil, `{"status":{"phase":"Running","podIP":%q,"podIPs":[{"ip":%q}],"startTime":%q,`+
		`"conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q},{"type":"ContainersReady","status":"True","lastTransitionTime":%q}],`+
		`"containerStatuses":[{"name":"app","image":"registry.k8s.io/pause:3.10","imageID":"","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":%q}}}]}}`,
		ip, ip, now, now, now, now)
}

// BenchmarkPatchPodStatus measures the first status patch of bound pods.
func BenchmarkPatchPodStatus(b *testing.B) {
	runPodOps(b, podsBound, "patches/s", func(ctx context.Context, pods typedcorev1.PodInterface, i int) error {
		_, err := pods.Patch(ctx, benchPod(i, "").Name, types.StrategicMergePatchType, runningStatusPatch(i), metav1.PatchOptions{}, "status")
		return err
	})
}

// BenchmarkWatchFanout measures pod creation while every node watches its
// own pods (fieldSelector spec.nodeName, as agents do) and a few clients
// watch all pods (as the scheduler and controllers do): each pod created is
// delivered to its node's watcher and to every all-pods watcher.
func BenchmarkWatchFanout(b *testing.B) {
	const allPodWatchers = 4
	s := newBenchServer(b)
	ctx, cancel := context.WithCancel(testContext(b))
	defer cancel()
	pods := s.client.CoreV1().Pods("default")
	delivered := make(chan struct{}, 1024)
	watchers := make([]watch.Interface, 0, benchNodes+allPodWatchers)
	for i := 0; i < benchNodes+allPodWatchers; i++ {
		opts := metav1.ListOptions{ResourceVersion: "0"}
		if i < benchNodes {
			opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", benchNodeName(i)).String()
		}
		w, err := pods.Watch(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		watchers = append(watchers, w)
		go func() {
			for range w.ResultChan() {
				delivered <- struct{}{}
			}
		}()
	}
	defer func() {
		for _, w := range watchers {
			w.Stop()
		}
	}()
	b.ReportAllocs()
	defer measureCPU(b)()
	go func() {
		if err := createBenchPods(ctx, s, 0, b.N, true); err != nil {
			b.Error(err)
			cancel()
		}
	}()
	for i := 0; i < b.N*(1+allPodWatchers); i++ {
		select {
		case <-delivered:
		case <-ctx.Done():
			b.Fatalf("%d of %d events delivered", i, b.N*(1+allPodWatchers))
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
}

// BenchmarkListPods measures a full LIST of 3000 bound pods, served from
// the watch cache, decoded by client-go from protobuf.
func BenchmarkListPods(b *testing.B) {
	s := newBenchServer(b)
	ctx := testContext(b)
	const count = 3000
	if err := createBenchPods(ctx, s, 0, count, true); err != nil {
		b.Fatal(err)
	}
	pods := s.client.CoreV1().Pods("default")
	b.ReportAllocs()
	defer measureCPU(b)()
	for i := 0; i < b.N; i++ {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(list.Items) != count {
			b.Fatalf("listed %d pods, want %d", len(list.Items), count)
		}
	}
}

// BenchmarkMemoryPerPod reports the server's heap per stored bound pod
// (watch cache, embedded etcd and all) after creating 10000 of them
// through the API: the heap after a GC, less the heap of the started
// server with its nodes.
func BenchmarkMemoryPerPod(b *testing.B) {
	const count = 10000
	for b.Loop() {
		s := newBenchServer(b)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := createBenchPods(testContext(b), s, 0, count, true); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/count, "heap-bytes/pod")
		runtime.KeepAlive(s)
	}
}

// BenchmarkDeletePod measures deleting bound pods with grace period 0, as
// bench/api does (each releases its node share).
func BenchmarkDeletePod(b *testing.B) {
	zero := int64(0)
	runPodOps(b, podsBound, "deletes/s", func(ctx context.Context, pods typedcorev1.PodInterface, i int) error {
		return pods.Delete(ctx, benchPod(i, "").Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
}
