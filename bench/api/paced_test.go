package main

import (
	"context"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// TestCreatePodsPacedCreatesEachPodOnceAndForgetsFailures: every index is
// created once across the clients, a refused create is counted and its
// start time cleared (so a watcher never times it), and forget clears the
// rest for the next phase.
func TestCreatePodsPacedCreatesEachPodOnceAndForgetsFailures(t *testing.T) {
	const n = 30
	s := shape{nodes: 4, pods: n}
	cs := fake.NewClientset(benchPod(7, s.nodes)) // pod 7 exists: its create is refused
	clients := []kubernetes.Interface{cs, cs, cs}
	w := &nodeWatchers{created: make([]atomic.Int64, n), added: make([]atomic.Int64, n)}
	p := createPodsPaced(context.Background(), clients, w, s, n, 1000)
	if p.ok != n-1 || p.failed != 1 || !apierrors.IsAlreadyExists(p.firstErr) {
		t.Fatalf("phase = %+v, want %d ok and pod 7's AlreadyExists", p, n-1)
	}
	list, err := cs.CoreV1().Pods(benchNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != n {
		t.Fatalf("%d pods stored (%v), want %d", len(list.Items), err, n)
	}
	for i := range n {
		if started := w.created[i].Load() != 0; started != (i != 7) {
			t.Errorf("pod %d: create time kept = %v", i, started)
		}
		w.added[i].Store(1)
	}
	w.forget()
	for i := range n {
		if w.created[i].Load() != 0 || w.added[i].Load() != 0 {
			t.Fatalf("pod %d still timed after forget", i)
		}
	}
}
