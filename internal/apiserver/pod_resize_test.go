package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodResizeAsKubeAPIServer resizes a bound pod through pods/resize: the
// subresource changes only the containers' resources and resize policies,
// bumps the pod's generation and refuses a change of QoS class, as
// kube-apiserver's ResizeStrategy does; the node's usage follows the larger
// of the asked and the allocated requests, as kube-scheduler counts a pod.
func TestPodResizeAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	createNodes(t, s, "n1") // 8 cpu
	pods := s.client.CoreV1().Pods("default")
	bind := func(name string) error {
		return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
	}
	for _, p := range []*corev1.Pod{requestingPod("resized", "2", 0), requestingPod("other", "4", 0)} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := bind("resized"); err != nil {
		t.Fatal(err)
	}

	// The subresource takes the resources; the label and image are dropped.
	patch := `{"metadata":{"labels":{"ignored":"yes"}},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"5"}}}]}}`
	got, err := pods.Patch(ctx, "resized", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatalf("resize: %v", err)
	}
	if cpu := got.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.String() != "5" || got.Spec.Containers[0].Image != "busybox" ||
		got.Labels["ignored"] != "" || got.Generation != 2 {
		t.Fatalf("after resize: cpu %s image %s labels %v generation %d, want 5, busybox, no new label, 2",
			cpu.String(), got.Spec.Containers[0].Image, got.Labels, got.Generation)
	}
	// 5 + 4 > 8: the resize counts on the node before its agent allocates it.
	if err := bind("other"); !apierrors.IsConflict(err) {
		t.Fatalf("bind 4 cpu beside a pod resized to 5 of 8: %v, want 409", err)
	}

	// The node allocates 5, then the pod is resized down to 1: until the
	// node allocates 1 the usage keeps the 5 it allocated.
	setAllocated := func(cpu string) {
		t.Helper()
		p, err := pods.Get(ctx, "resized", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "busybox",
			AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity(cpu)}}}
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("status allocating %s cpu: %v", cpu, err)
		}
	}
	setAllocated("5")
	got, err = pods.Get(ctx, "resized", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resourceQuantity("1")
	if _, err := pods.UpdateResize(ctx, "resized", got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("resize down through update: %v", err)
	}
	if err := bind("other"); !apierrors.IsConflict(err) {
		t.Fatalf("bind 4 cpu while 5 are still allocated: %v, want 409", err)
	}
	setAllocated("1")
	if err := bind("other"); err != nil {
		t.Fatalf("bind 4 cpu once the node allocated 1: %v", err)
	}

	// A resize may not change the QoS class (burstable to guaranteed), and
	// the pod itself may not change its resources.
	guaranteed := `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"1","memory":"1Gi"}}}]}}`
	before := storeRevision(t, s)
	_, err = pods.Patch(ctx, "resized", types.StrategicMergePatchType, []byte(guaranteed), metav1.PatchOptions{}, "resize")
	wantInvalid(t, err, "spec", "Pod QOS Class may not change as a result of resizing")
	_, err = pods.Patch(ctx, "resized", types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"2"}}}]}}`), metav1.PatchOptions{})
	wantInvalid(t, err, "spec", "")
	assertStoreUnchanged(t, s, before)

	// GET on the subresource is the pod.
	fromResize, err := s.dynamic.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default").Get(ctx, "resized", metav1.GetOptions{}, "resize")
	if err != nil || fromResize.GetName() != "resized" || fromResize.GetGeneration() != 3 {
		t.Fatalf("GET pods/resized/resize: %v %v, want the pod at generation 3", fromResize, err)
	}
}
