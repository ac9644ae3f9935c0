package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPriorityClassCRUD serves scheduling.k8s.io/v1 PriorityClasses as
// kube-apiserver does: cluster-scoped, stored at its key, defaulted and
// validated by upstream's strategy (user values up to one billion, the
// "system-" prefix reserved, value and preemption policy immutable), and
// printed with kubectl's columns.
func TestPriorityClassCRUD(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	classes := s.client.SchedulingV1().PriorityClasses()

	pc, err := classes.Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, Description: "important pods",
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if pc.Namespace != "" || pc.UID == "" {
		t.Fatalf("created %+v, want a cluster-scoped object with a uid", pc.ObjectMeta)
	}
	if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("preemptionPolicy %v, want upstream's default PreemptLowerPriority", pc.PreemptionPolicy)
	}
	kv, err := s.store.Get(ctx, "/registry/priorityclasses/high")
	if err != nil || len(kv.Value) == 0 {
		t.Fatalf("kube-apiserver's key /registry/priorityclasses/high: %q, %v", kv.Value, err)
	}

	for name, bad := range map[string]*schedulingv1.PriorityClass{
		"value above the user maximum": {ObjectMeta: metav1.ObjectMeta{Name: "too-high"}, Value: 1000000001},
		"reserved system- prefix":      {ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 10},
		"unknown preemption policy": {ObjectMeta: metav1.ObjectMeta{Name: "odd-policy"}, Value: 10,
			PreemptionPolicy: ptr.To(corev1.PreemptionPolicy("Sometimes"))},
	} {
		if _, err := classes.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want Invalid", name, err)
		}
	}

	changed := pc.DeepCopy()
	changed.Value = 2000
	if _, err := classes.Update(ctx, changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "value") {
		t.Fatalf("changing the value: %v, want Invalid on value (immutable)", err)
	}
	changed = pc.DeepCopy()
	changed.Description = "still important"
	if _, err := classes.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("changing the description: %v", err)
	}

	cols, rows := tableOf(t, s, "/apis/scheduling.k8s.io/v1/priorityclasses/high")
	if cols != "Name Value Global-Default Age PreemptionPolicy" || len(rows) != 1 ||
		rows[0].Cells[1] != float64(1000) || rows[0].Cells[4] != "PreemptLowerPriority" {
		t.Fatalf("table columns %q rows %+v, want upstream's columns and the class", cols, rows)
	}

	if err := classes.Delete(ctx, "high", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := classes.Get(ctx, "high", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v, want NotFound", err)
	}
}

// TestSystemPriorityClassesExistAndStay: as kube-apiserver's scheduling
// post-start hook, the server starts with system-node-critical and
// system-cluster-critical, and refuses deleting them, as upstream's
// priorityclass storage does.
func TestSystemPriorityClassesExistAndStay(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	classes := s.client.SchedulingV1().PriorityClasses()
	for name, value := range map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000} {
		pc, err := classes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("system class %s: %v", name, err)
		}
		if pc.Value != value || pc.GlobalDefault || pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
			t.Errorf("%s: value %d globalDefault %v preemptionPolicy %v, want %d, false, PreemptLowerPriority",
				name, pc.Value, pc.GlobalDefault, pc.PreemptionPolicy, value)
		}
		err = classes.Delete(ctx, name, metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "this is a system priority class and cannot be deleted") {
			t.Errorf("deleting %s: %v, want upstream's Forbidden", name, err)
		}
		if _, err := classes.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s after the refused delete: %v", name, err)
		}
	}
	if _, err := classes.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000},
		metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("creating system-node-critical again: %v, want AlreadyExists", err)
	}
}
