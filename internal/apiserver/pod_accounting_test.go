package apiserver

import (
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func requestingPod(name, cpu string, hostPort int32) *corev1.Pod {
	p := testPod(name)
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resourceQuantity(cpu)}
	if hostPort > 0 {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: hostPort}}
	}
	return p
}

// Binding checks the node's constraints against what is already bound there,
// in the same transaction, and deletions and finished pods give room back.
func TestBindingChecksNodeConstraints(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	createNodes(t, s, "n1") // 8 cpu
	pods := s.client.CoreV1().Pods("default")
	bind := func(name, node string) error {
		return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
	}
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create(requestingPod("a", "5", 8080))
	create(requestingPod("b", "5", 0))
	create(requestingPod("c", "1", 8080))
	create(requestingPod("huge", "9", 0))
	create(requestingPod("lost", "1", 0))

	if err := bind("a", "n1"); err != nil {
		t.Fatalf("first bind: %v", err)
	}
	for _, tc := range []struct {
		pod, node string
		code      int32
	}{
		{"b", "n1", http.StatusConflict},               // 5+5 > 8 cpu: may fit later
		{"c", "n1", http.StatusConflict},               // host port 8080 held by a
		{"huge", "n1", http.StatusUnprocessableEntity}, // 9 > 8: never fits n1
		{"lost", "no-such-node", http.StatusConflict},  // node must exist
	} {
		before := storeRevision(t, s)
		err := bind(tc.pod, tc.node)
		if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != tc.code {
			t.Errorf("bind %s to %s: %v, want code %d", tc.pod, tc.node, err, tc.code)
		}
		assertStoreUnchanged(t, s, before)
	}

	// A pod created already bound that its node's kubelet would refuse is
	// stored as the kubelet leaves it: failed, counting nothing.
	for _, tc := range []struct {
		pod          *corev1.Pod
		reason, text string
	}{
		{requestingPod("prebound-cpu", "5", 0), "OutOfcpu", "Pod was rejected: Node didn't have enough resource: cpu, requested: 5000, used: 5000, capacity: 8000"},
		{requestingPod("prebound-port", "1", 8080), "NodePorts", "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
	} {
		tc.pod.Spec.NodeName = "n1"
		created, err := pods.Create(ctx, tc.pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating bound pod %s that does not fit: %v, want it stored failed", tc.pod.Name, err)
		}
		stored, err := pods.Get(ctx, tc.pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []*corev1.Pod{created, stored} {
			if p.Status.Phase != corev1.PodFailed || p.Status.Reason != tc.reason || p.Status.Message != tc.text || p.Status.QOSClass != corev1.PodQOSBurstable {
				t.Errorf("pod %s: status %+v, want Failed %s %q", tc.pod.Name, p.Status, tc.reason, tc.text)
			}
		}
		if created.ResourceVersion != stored.ResourceVersion {
			t.Errorf("pod %s: created at %s, stored at %s", tc.pod.Name, created.ResourceVersion, stored.ResourceVersion)
		}
	}

	// a finishes: its share is released and b fits.
	a, err := pods.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Status.Phase = corev1.PodSucceeded
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := bind("b", "n1"); err != nil {
		t.Fatalf("bind after a finished: %v", err)
	}
	// Deleting b (grace 0) releases it too: c (with the port a held) fits.
	zero := int64(0)
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := bind("c", "n1"); err != nil {
		t.Fatalf("bind after b was deleted: %v", err)
	}
	// c holds 1 cpu: seven more 1-cpu pods fill the node to 8, the eighth is refused.
	for i := range 8 {
		name := fmt.Sprintf("fill-%d", i)
		create(requestingPod(name, "1", 0))
		err := bind(name, "n1")
		switch {
		case i < 7 && err != nil:
			t.Fatalf("bind %s with room left: %v", name, err)
		case i == 7 && !apierrors.IsConflict(err):
			t.Fatalf("bind %s beyond 8 cpu: %v, want 409", name, err)
		}
	}
	// A pod held by a finalizer keeps its share until the finalizer goes and
	// the update removing it deletes the pod.
	if _, err := pods.Patch(ctx, "fill-0", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "fill-0", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := bind("fill-7", "n1"); !apierrors.IsConflict(err) {
		t.Fatalf("bind fill-7 while fill-0 is held by its finalizer: %v, want 409", err)
	}
	if _, err := pods.Patch(ctx, "fill-0", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "fill-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("fill-0 after its last finalizer went: %v, want 404", err)
	}
	if err := bind("fill-7", "n1"); err != nil {
		t.Fatalf("bind fill-7 after fill-0 was deleted: %v", err)
	}
}

// Each server keeps its own copy of the node usage records it last wrote;
// when another server sharing the store has since bound pods to the node,
// the stale copy must not let a pod through that the stored record refuses.
func TestUsageWrittenByAnotherServerIsHonoured(t *testing.T) {
	t.Parallel()
	s1 := newTestServer(t)
	s2 := newTestServerWith(t, func(c *Config) { c.Store = s1.store })
	ctx := testContext(t)
	createNodes(t, s1, "n1") // 8 cpu
	bound := func(name, cpu string) *corev1.Pod {
		p := requestingPod(name, cpu, 0)
		p.Spec.NodeName = "n1"
		return p
	}
	if _, err := s1.client.CoreV1().Pods("default").Create(ctx, bound("a", "5"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a on server 1: %v", err)
	}
	if _, err := s2.client.CoreV1().Pods("default").Create(ctx, bound("b", "2"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create b on server 2: %v", err)
	}
	// Server 1 last wrote 5 cpu used; the store holds 7, so c is refused
	// as the kubelet refuses it, with the stored figures.
	c, err := s1.client.CoreV1().Pods("default").Create(ctx, bound("c", "2"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create c (2 cpu onto 7 of 8 used) on server 1: %v", err)
	}
	if want := "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 7000, capacity: 8000"; c.Status.Phase != corev1.PodFailed || c.Status.Message != want {
		t.Fatalf("c (2 cpu onto 7 of 8 used): %s %q, want Failed %q", c.Status.Phase, c.Status.Message, want)
	}
	if _, err := s1.client.CoreV1().Pods("default").Create(ctx, bound("d", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create d (1 cpu onto 7 of 8 used) on server 1: %v", err)
	}
}
