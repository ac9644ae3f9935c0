package apiserver

import (
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkCreatePod measures pod creation through client-go (protobuf)
// over loopback HTTP into embedded etcd, with 16 clients per CPU (32 on
// two cores, as the first benchmark shape); it reports pods/s. No
// assertion on time: the figures are for comparing runs.
func BenchmarkCreatePod(b *testing.B) {
	s := newTestServer(b)
	ctx := testContext(b)
	pods := s.client.CoreV1().Pods("default")
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			pod := boundPod(fmt.Sprintf("bench-%d", n.Add(1)), "node-1")
			if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
}

// BenchmarkListPods measures a full LIST of 1000 pods, served from the
// watch cache, decoded by client-go from protobuf.
func BenchmarkListPods(b *testing.B) {
	s := newTestServer(b)
	ctx := testContext(b)
	pods := s.client.CoreV1().Pods("default")
	const count = 1000
	for i := 0; i < count; i++ {
		if _, err := pods.Create(ctx, boundPod(fmt.Sprintf("p-%d", i), fmt.Sprintf("node-%d", i%10)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
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
