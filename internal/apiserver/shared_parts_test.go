package apiserver

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// The watch cache's pods of one template share their labels, containers,
// tolerations, security context and managed field sets; a change to one
// pod leaves the others as they were.
func TestCachedPodsOfOneTemplateShareTheirParts(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, _, lw := localReadsOfOnePod(ctx, t, "first")
	templated := func(name, image string) *corev1.Pod {
		pod := localReadsPod(name)
		pod.Labels = map[string]string{"app": "templated"}
		pod.Spec.Containers[0].Image = image
		pod.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: new(bool)}
		return pod
	}
	var lastRV string
	for _, pod := range []*corev1.Pod{templated("a", "busybox"), templated("b", "busybox"), templated("c", "pause")} {
		created, err := s.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lastRV = created.ResourceVersion
	}
	cached := func(rv string) map[string]*corev1.Pod {
		t.Helper()
		opts := metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
		list, err := cache.ToListerWatcherWithContext(lw).ListWithContext(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		pods := map[string]*corev1.Pod{}
		for _, item := range items {
			pods[item.(*corev1.Pod).Name] = item.(*corev1.Pod)
		}
		return pods
	}
	pods := cached(lastRV)
	a, b, c := pods["a"], pods["b"], pods["c"]
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] || &a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] ||
		a.Spec.SecurityContext != b.Spec.SecurityContext || a.ManagedFields[0].FieldsV1 != b.ManagedFields[0].FieldsV1 ||
		reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("pods a and b of one template keep their own copies of its parts")
	}
	if &c.Spec.Containers[0] == &a.Spec.Containers[0] || c.Spec.Containers[0].Image != "pause" {
		t.Errorf("pod c (image pause) shares pod a's containers: %+v", c.Spec.Containers)
	}
	if &c.Spec.Tolerations[0] != &a.Spec.Tolerations[0] {
		t.Error("pod c's tolerations, equal to a's, are not shared")
	}

	patch := []byte(`{"spec":{"containers":[{"name":"c","image":"changed"}]}}`)
	changed, err := s.client.CoreV1().Pods("default").Patch(ctx, "b", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods = cached(changed.ResourceVersion)
	if got := pods["b"].Spec.Containers[0].Image; got != "changed" {
		t.Errorf("pod b's image in the cache is %q after the patch", got)
	}
	if got := pods["a"].Spec.Containers[0].Image; got != "busybox" || &pods["a"].Spec.Containers[0] != &a.Spec.Containers[0] {
		t.Errorf("pod a's image changed with pod b's: %q", got)
	}
	served, err := s.client.CoreV1().Pods("default").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || served.Spec.Containers[0].Image != "busybox" {
		t.Errorf("pod a served as %v (%v)", served, err)
	}
}
