package watchcache

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth/berth/internal/store"
)

// The benchmarks drive the cache's apply path directly with store events, so
// they measure the cache (decode, state, history, dispatch), not etcd.

func benchPod(i, nodes int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "bench", Name: fmt.Sprintf("pod-%06d", i), UID: types.UID(fmt.Sprintf("0d7a3c2e-0000-4000-8000-%012d", i)),
			Labels: map[string]string{"app": "web", "tier": "frontend", "pod-template-hash": "5d4f8c7b9"},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%04d", i%nodes),
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.local/web:1.2.3",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.0.1"},
	}
}

func benchDecode(kv store.KV) (k8sruntime.Object, error) {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(kv.Value, pod); err != nil {
		return nil, err
	}
	pod.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return pod, nil
}

func benchAttrs(obj k8sruntime.Object) (labels.Set, fields.Set, error) {
	pod := obj.(*corev1.Pod)
	return labels.Set(pod.Labels), fields.Set{
		"metadata.name": pod.Name, "metadata.namespace": pod.Namespace, "spec.nodeName": pod.Spec.NodeName,
	}, nil
}

// newStorelessCache is a cache marked ready at revision 1 with no store behind it.
func newStorelessCache() *Cache {
	c := New(Config{
		Prefix: "/registry/pods/", Decode: benchDecode, Attrs: benchAttrs,
		IndexFields: []string{"spec.nodeName"}, NewObject: func() k8sruntime.Object { return &corev1.Pod{} },
	})
	c.mu.Lock()
	c.advanceLocked(1)
	c.history = newHistory(c.cfg.historySizing(), 1, c.snap)
	c.mu.Unlock()
	c.readyOnce.Do(func() { close(c.ready) })
	return c
}

func putEvent(p *corev1.Pod, rev int64) store.WatchResult {
	b, _ := json.Marshal(p)
	return store.WatchResult{Revision: rev, Events: []store.Event{{
		Type: store.EventPut,
		KV:   store.KV{Key: "/registry/pods/" + p.Namespace + "/" + p.Name, Value: b, ModRevision: rev},
	}}}
}

// BenchmarkMemoryPerCachedPod reports the heap the cache holds per pod
// (decoded object, attributes, tree, history and its snapshots), created one
// revision at a time as the API would.
func BenchmarkMemoryPerCachedPod(b *testing.B) {
	const pods = 20000
	events := make([]store.WatchResult, pods)
	jsonBytes := 0
	for i := range events {
		events[i] = putEvent(benchPod(i, 100), int64(i+2))
		jsonBytes += len(events[i].Events[0].KV.Value)
	}
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := newStorelessCache()
		for _, ev := range events {
			c.apply(ev)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/pods, "bytes/pod")
		b.ReportMetric(float64(jsonBytes)/pods, "json-bytes/pod")
		runtime.KeepAlive(c)
	}
}

// BenchmarkWatchFanout measures one pod event with 1000 node watchers
// watching (each its own spec.nodeName): the index offers the event to one of
// them, which converts and receives it.
func BenchmarkWatchFanout(b *testing.B) {
	const nodes = 1000
	c := newStorelessCache()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	received := make(chan struct{}, 1024)
	for n := 0; n < nodes; n++ {
		w, err := c.Watch(ctx, WatchOptions{ResourceVersion: "0", Field: fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("node-%04d", n))})
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for range w.ResultChan() {
				received <- struct{}{}
			}
		}()
	}
	events := make([]store.WatchResult, 4096)
	for i := range events {
		events[i] = putEvent(benchPod(i, nodes), 0)
	}
	rev := int64(2)
	b.ReportAllocs()
	for b.Loop() {
		ev := events[rev%int64(len(events))]
		ev.Revision = rev
		ev.Events = []store.Event{ev.Events[0]}
		ev.Events[0].KV.ModRevision = rev
		c.apply(ev)
		<-received
		rev++
	}
}
