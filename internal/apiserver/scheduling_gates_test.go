package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A gated pod cannot be bound until its gates are removed; removing them
// is an update like any other.
func TestGatedPodsAreBoundOnlyOnceReleased(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	createNodes(t, s, "n1")
	pod := testPod("gated")
	pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}, {Name: "example.com/review"}}
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := func() error {
		return s.client.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
	}
	before := storeRevision(t, s)
	if err := bind(); !apierrors.IsConflict(err) {
		t.Fatalf("binding a gated pod: %v, want 409 Conflict", err)
	}
	assertStoreUnchanged(t, s, before)
	for _, patch := range []string{
		`{"spec":{"schedulingGates":[{"name":"example.com/review"}]}}`, // one removed
		`{"spec":{"schedulingGates":null}}`,                            // the last
	} {
		if _, err := s.client.CoreV1().Pods("default").Patch(ctx, "gated", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patch %s: %v", patch, err)
		}
	}
	if err := bind(); err != nil {
		t.Fatalf("binding the released pod: %v", err)
	}
	got, err := s.client.CoreV1().Pods("default").Get(ctx, "gated", metav1.GetOptions{})
	if err != nil || got.Spec.NodeName != "n1" {
		t.Fatalf("after the bind: node %q, %v", got.Spec.NodeName, err)
	}
}
