package informeropts_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
type countingPods struct{ lists int }

func (c *countingPods) List(metav1.ListOptions) (runtime.Object, error) {
	c.lists++
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
	first, second := &countingPods{}, &countingPods{}
	informeropts.ReadThrough(factory, &corev1.Pod{}, first)
	// A second user of the factory: the first source stays.
	informeropts.ReadThrough(factory, &corev1.Pod{}, second)
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
	if first.lists == 0 || second.lists != 0 {
		t.Fatalf("lists: first source %d, second %d; want the first only", first.lists, second.lists)
	}
	for _, action := range client.Actions() {
		t.Errorf("the client was asked: %s %s", action.GetVerb(), action.GetResource().Resource)
	}
	if pods, err := lister.List(labels.Everything()); err != nil || len(pods) != 0 {
		t.Fatalf("lister: %v %v", pods, err)
	}
}

func TestReadThroughRefusesAnInformerMadeOverTheClient(t *testing.T) {
	factory := informers.NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, informeropts.Factory()...)
	// As upstream's quota evaluators do when handed the factory.
	factory.Core().V1().Pods().Lister()
	defer func() {
		if recover() == nil {
			t.Fatal("ReadThrough accepted a pod informer the factory had made over its client")
		}
	}()
	informeropts.ReadThrough(factory, &corev1.Pod{}, &countingPods{})
}
