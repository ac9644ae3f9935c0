package apiserver

import (
	"context"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
		{"create bound past a shrunk node", func() error {
			_, err := pods.Create(ctx, bigBound, metav1.CreateOptions{})
			return err
		}, http.StatusUnprocessableEntity},
		{"bind a pod bound since it was cached", func() error { return bind("small") }, http.StatusConflict},
	} {
		before := storeRevision(t, s)
		err := tc.write()
		if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
		assertStoreUnchanged(t, s, before)
	}
}
