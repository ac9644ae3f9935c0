package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRuntimeClassCRUD serves node.k8s.io/v1 RuntimeClasses as
// kube-apiserver does: cluster-scoped, stored at its key, validated by
// upstream's strategy (a DNS-label handler that never changes), and
// printed with kubectl's NAME HANDLER AGE columns.
func TestRuntimeClassCRUD(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	classes := s.client.NodeV1().RuntimeClasses()

	rc, err := classes.Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxed"},
		Handler:    "test-handler",
		Overhead:   &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("250m")}},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "yes"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if rc.Namespace != "" || rc.UID == "" {
		t.Fatalf("created %+v, want a cluster-scoped object with a uid", rc.ObjectMeta)
	}
	kv, err := s.store.Get(ctx, "/registry/runtimeclasses/sandboxed")
	if err != nil || len(kv.Value) == 0 {
		t.Fatalf("kube-apiserver's key /registry/runtimeclasses/sandboxed: %q, %v", kv.Value, err)
	}
	got, err := classes.Get(ctx, "sandboxed", metav1.GetOptions{})
	if err != nil || got.Handler != "test-handler" || got.Overhead.PodFixed.Cpu().String() != "250m" {
		t.Fatalf("get: %+v, %v", got, err)
	}

	for name, bad := range map[string]*nodev1.RuntimeClass{
		"handler not a DNS label": {ObjectMeta: metav1.ObjectMeta{Name: "bad-handler"}, Handler: "Not_A_Label"},
		"no handler":              {ObjectMeta: metav1.ObjectMeta{Name: "no-handler"}},
		"negative overhead": {ObjectMeta: metav1.ObjectMeta{Name: "bad-overhead"}, Handler: "h",
			Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("-1")}}},
	} {
		if _, err := classes.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want Invalid", name, err)
		}
	}

	got.Handler = "other-handler"
	if _, err := classes.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "handler") {
		t.Fatalf("changing the handler: %v, want Invalid on handler (immutable)", err)
	}

	cols, rows := tableOf(t, s, "/apis/node.k8s.io/v1/runtimeclasses")
	if cols != "Name Handler Age" || len(rows) != 1 || rows[0].Cells[1] != "test-handler" {
		t.Fatalf("table columns %q rows %+v, want Name Handler Age and the class", cols, rows)
	}

	if err := classes.Delete(ctx, "sandboxed", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := classes.Get(ctx, "sandboxed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v, want NotFound", err)
	}
}
