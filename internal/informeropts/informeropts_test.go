package informeropts_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/informeropts"
)

func TestStripManagedFieldsKeepsTheRest(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{NodeName: "n"},
	}
	got, err := informeropts.StripManagedFields(pod)
	if err != nil {
		t.Fatal(err)
	}
	out := got.(*corev1.Pod)
	if out.ManagedFields != nil || out.Name != "p" || out.Labels["a"] != "b" || out.Spec.NodeName != "n" {
		t.Fatalf("stripped pod: %+v", out)
	}
	// A tombstone passes through untouched.
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	if got, err := informeropts.StripManagedFields(tomb); err != nil || got != any(tomb) {
		t.Fatalf("tombstone: %v %v", got, err)
	}
}

// countingPods is a ListerWatcher of no pods that counts its lists.
type countingPods struct{ lists atomic.Int32 }

func (c *countingPods) List(metav1.ListOptions) (runtime.Object, error) {
	c.lists.Add(1)
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (c *countingPods) Watch(metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// IsWatchListSemanticsUnSupported: the reflector lists, then watches.
func (c *countingPods) IsWatchListSemanticsUnSupported() bool { return true }

func TestReadThroughListsThroughItsSourceNotTheClient(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informeropts.Factory()...)
	source := &countingPods{}
	informeropts.ReadThrough(factory, &corev1.Pod{}, source)
	lister := factory.Core().V1().Pods().Lister()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("the %v informer did not sync within 30 s", typ)
		}
	}
	if source.lists.Load() == 0 {
		t.Fatal("the informer synced without listing its source")
	}
	for _, action := range client.Actions() {
		t.Errorf("the client was asked: %s %s", action.GetVerb(), action.GetResource().Resource)
	}
	if pods, err := lister.List(labels.Everything()); err != nil || len(pods) != 0 {
		t.Fatalf("lister: %v %v", pods, err)
	}
}

func TestReadThroughRefusesAnInformerTheFactoryHas(t *testing.T) {
	for name, before := range map[string]func(informers.SharedInformerFactory){
		// As upstream's quota evaluators do when handed the factory.
		"made over the client": func(f informers.SharedInformerFactory) { f.Core().V1().Pods().Lister() },
		// Whose source would be silently ignored.
		"read through before": func(f informers.SharedInformerFactory) {
			informeropts.ReadThrough(f, &corev1.Pod{}, &countingPods{})
		},
	} {
		t.Run(name, func(t *testing.T) {
			factory := informers.NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, informeropts.Factory()...)
			before(factory)
			defer func() {
				if recover() == nil {
					t.Fatal("ReadThrough accepted a pod informer the factory already had")
				}
			}()
			informeropts.ReadThrough(factory, &corev1.Pod{}, &countingPods{})
		})
	}
}

// sharedPods lists the same pod objects every time, as the watch cache's
// local reads do (an untyped list of pointers, which a reflector keeps
// as they are), and watches nothing.
type sharedPods struct{ pods []runtime.Object }

func (s sharedPods) List(metav1.ListOptions) (runtime.Object, error) {
	list := &metainternalversion.List{Items: s.pods}
	list.ResourceVersion = "1"
	return list, nil
}

func (s sharedPods) Watch(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil }

func (s sharedPods) IsWatchListSemanticsUnSupported() bool { return true }

// BenchmarkReadThroughInformerHeap reports what each informer that reads
// pods through to the watch cache keeps per pod (B/pod): the objects are
// the cache's, so it is the informer's own key map and namespace index,
// the cost of each controller having an informer factory of its own.
func BenchmarkReadThroughInformerHeap(b *testing.B) {
	const nPods, nInformers = 10000, 4
	source := sharedPods{}
	for i := range nPods {
		source.pods = append(source.pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i%20), Name: fmt.Sprintf("pod-%06d-x7k2p", i)}})
	}
	var perPod float64
	for b.Loop() {
		before := heapInUse()
		ctx, cancel := context.WithCancel(b.Context())
		var factories []informers.SharedInformerFactory
		for range nInformers {
			factory := informers.NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, informeropts.Factory()...)
			informeropts.ReadThrough(factory, &corev1.Pod{}, source)
			factory.Core().V1().Pods().Informer()
			factory.Start(ctx.Done())
			for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
				if !ok {
					b.Fatalf("the %v informer did not sync", typ)
				}
			}
			factories = append(factories, factory)
		}
		perPod = float64(heapInUse()-before) / nInformers / nPods
		cancel()
		for _, f := range factories {
			f.Shutdown()
		}
	}
	b.ReportMetric(perPod, "B/pod")
}

func heapInUse() uint64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}
