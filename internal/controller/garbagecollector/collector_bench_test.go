package garbagecollector

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/berth/berth/internal/testkit/wait"
)

// BenchmarkCollectorBytesPerObject reports the collector's heap cost per
// watched object (its informers' stores and its graph) for 10000 pods
// owned by 1000 ConfigMaps, read through a fake metadata client.
func BenchmarkCollectorBytesPerObject(b *testing.B) {
	const owners, perOwner = 1000, 10
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	var perObject float64
	for range b.N {
		scheme := metadatafake.NewTestScheme()
		if err := metav1.AddMetaToScheme(scheme); err != nil {
			b.Fatal(err)
		}
		meta := metadatafake.NewSimpleMetadataClient(scheme)
		var uids []types.UID
		add := func(gvr schema.GroupVersionResource, kind, name string, owners ...metav1.OwnerReference) metav1.OwnerReference {
			uid := types.UID(fmt.Sprintf("%s-%s", gvr.Resource, name))
			uids = append(uids, uid)
			obj := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, OwnerReferences: owners,
					Labels: map[string]string{"app": name}}}
			if err := meta.Tracker().Create(gvr, obj, "ns"); err != nil {
				b.Fatal(err)
			}
			return metav1.OwnerReference{APIVersion: "v1", Kind: kind, Name: name, UID: uid}
		}
		for i := range owners {
			owner := add(configMaps, "ConfigMap", fmt.Sprintf("owner-%d", i))
			for j := range perOwner {
				add(pods, "Pod", fmt.Sprintf("pod-%d-%d", i, j), owner)
			}
		}
		client := fake.NewClientset()
		client.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"get", "list", "watch", "delete"}},
			{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "list", "watch", "delete"}},
		}}}

		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ctx, cancel := context.WithCancel(context.Background())
		c, err := New(ctx, Config{Client: client, Metadata: meta})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		wait.Until(b, time.Minute, "every object to be in the graph", func() bool {
			for _, uid := range uids {
				if !c.gc.GraphHasUID(uid) {
					return false
				}
			}
			return true
		})
		runtime.GC()
		runtime.ReadMemStats(&after)
		perObject = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / (owners * (perOwner + 1))
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(perObject, "bytes/object")
}
