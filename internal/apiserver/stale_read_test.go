package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// staleReader answers every Get with the first answer it had for the key,
// as a watch cache lagging forever behind would.
type staleReader struct {
	collectionReader
	mu    sync.Mutex
	first map[string]runtime.Object
}

func (r *staleReader) Get(ctx context.Context, key string, minRV int64) (runtime.Object, int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if obj, ok := r.first[key]; ok {
		return obj, 0, nil
	}
	obj, rev, err := r.collectionReader.Get(ctx, key, minRV)
	if err == nil {
		r.first[key] = obj
	}
	return obj, rev, err
}

func staleReaders(ctx context.Context, spec readerSpec) (collectionReader, error) {
	r, err := watchCacheReaders(nil)(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &staleReader{collectionReader: r, first: map[string]runtime.Object{}}, nil
}

// Binding and creating bound pods read the pod and node from the watch
// cache first; a stale copy there must never let a write through that the
// stored objects would refuse.
func TestStaleCachedReadsNeverDecideABind(t *testing.T) {
	t.Parallel()
	s := newTestServerWith(t, func(c *Config) { c.newReader = staleReaders })
	ctx := testContext(t)
	createNodes(t, s, "n1") // 8 cpu
	pods := s.client.CoreV1().Pods("default")
	bind := func(name string) error {
		return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
	}
	for _, p := range []*corev1.Pod{requestingPod("small", "1", 0), requestingPod("big", "5", 0)} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Read "small" (unbound) and n1 (8 cpu) into the stale reader.
	if err := bind("small"); err != nil {
		t.Fatalf("bind small: %v", err)
	}
	node, err := s.client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Allocatable[corev1.ResourceCPU] = resourceQuantity("4")
	if _, err := s.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	bigBound := requestingPod("big-bound", "5", 0)
	bigBound.Spec.NodeName = "n1"
	for _, tc := range []struct {
		name  string
		write func() error
		code  int32
	}{
		{"bind past a shrunk node", func() error { return bind("big") }, http.StatusUnprocessableEntity},
		{"bind a pod bound since it was cached", func() error { return bind("small") }, http.StatusConflict},
	} {
		before := storeRevision(t, s)
		err := tc.write()
		if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
		assertStoreUnchanged(t, s, before)
	}
	// A pod created bound past the shrunk node is stored failed, refused
	// with the stored node's figures, not the stale copy's 8 cpu.
	created, err := pods.Create(ctx, bigBound, metav1.CreateOptions{})
	if want := "Pod was rejected: Node didn't have enough resource: cpu, requested: 5000, used: 1000, capacity: 4000"; err != nil || created.Status.Phase != corev1.PodFailed || created.Status.Message != want {
		t.Errorf("create bound past a shrunk node: %v, want Failed %q", err, want)
	}
	// Nor does the stale copy refuse one the stored node, grown past it, takes.
	node, err = s.client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Allocatable[corev1.ResourceCPU] = resourceQuantity("16")
	if _, err := s.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	grown := requestingPod("fits-grown", "10", 0)
	grown.Spec.NodeName = "n1"
	created, err = pods.Create(ctx, grown, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create bound within the grown node: %v", err)
	}
	if created.Status.Phase != corev1.PodPending {
		t.Errorf("create bound within the grown node: %s %q, want Pending", created.Status.Phase, created.Status.Message)
	}
}

// Updates and patches start from the watch cache's copy; whatever fails on
// a stale copy is retried from the store, so answers are the store's.
func TestStaleCachedReadsNeverDecideAnUpdate(t *testing.T) {
	t.Parallel()
	s := newTestServerWith(t, func(c *Config) { c.newReader = staleReaders })
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The reader keeps the first state it serves from here on.
	if _, err := cms.Patch(ctx, "cm", types.MergePatchType, []byte(`{"data":{"b":"2"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("first patch: %v", err)
	}
	merged, err := cms.Patch(ctx, "cm", types.MergePatchType, []byte(`{"data":{"c":"3"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("merge patch: %v", err)
	}
	if fmt.Sprint(merged.Data) != "map[a:1 b:2 c:3]" {
		t.Fatalf("merge patch applied to a stale object: %v", merged.Data)
	}
	tested, err := cms.Patch(ctx, "cm", types.JSONPatchType, []byte(`[{"op":"test","path":"/data/c","value":"3"},{"op":"replace","path":"/data/a","value":"4"}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("JSON patch testing the stored state: %v", err)
	}
	put := tested.DeepCopy()
	put.Data["d"] = "5"
	if _, err := cms.Update(ctx, put, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update at the stored resourceVersion: %v", err)
	}
	before := storeRevision(t, s)
	stale := created.DeepCopy()
	stale.Data["e"] = "6"
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update at an old resourceVersion: %v, want 409", err)
	}
	assertStoreUnchanged(t, s, before)
	got, err := cms.Get(ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Data) != "map[a:4 b:2 c:3 d:5]" {
		t.Fatalf("stored data %v", got.Data)
	}
}
