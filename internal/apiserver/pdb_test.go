package apiserver

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestPodDisruptionBudgetCRUD serves policy/v1 PodDisruptionBudgets as
// kube-apiserver does: namespaced, stored at its key, validated by
// upstream's strategy, status written only through the status
// subresource, and printed with kubectl's columns.
func TestPodDisruptionBudgetCRUD(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	budgets := s.client.PolicyV1().PodDisruptionBudgets("default")

	pdb, err := budgets.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 5},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if pdb.Generation != 1 || pdb.Status.DisruptionsAllowed != 0 {
		t.Fatalf("created generation %d status %+v, want generation 1 and the status dropped", pdb.Generation, pdb.Status)
	}
	if kv, err := s.store.Get(ctx, "/registry/poddisruptionbudgets/default/web"); err != nil || len(kv.Value) == 0 {
		t.Fatalf("kube-apiserver's key /registry/poddisruptionbudgets/default/web: %q, %v", kv.Value, err)
	}

	for name, bad := range map[string]*policyv1.PodDisruptionBudget{
		"both minAvailable and maxUnavailable": {ObjectMeta: metav1.ObjectMeta{Name: "both"}, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
		"negative minAvailable": {ObjectMeta: metav1.ObjectMeta{Name: "negative"}, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(-1))}},
		"percentage over 100": {ObjectMeta: metav1.ObjectMeta{Name: "over"}, Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromString("120%"))}},
		"unknown eviction policy": {ObjectMeta: metav1.ObjectMeta{Name: "policy"}, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)), UnhealthyPodEvictionPolicy: ptr.To(policyv1.UnhealthyPodEvictionPolicyType("Sometimes"))}},
	} {
		if _, err := budgets.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want Invalid", name, err)
		}
	}

	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
	pdb.Status.DisruptionsAllowed = 7
	if pdb, err = budgets.Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update spec: %v", err)
	}
	if pdb.Generation != 2 || pdb.Status.DisruptionsAllowed != 0 {
		t.Fatalf("after a spec update: generation %d status %+v, want generation 2 and the status unchanged", pdb.Generation, pdb.Status)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 2, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(9))
	if pdb, err = budgets.UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	if pdb.Status.DisruptionsAllowed != 1 || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Generation != 2 {
		t.Fatalf("after a status update: %+v %+v, want the status written and the spec kept", pdb.Spec, pdb.Status)
	}
	pdb.Status.DisruptionsAllowed = -1
	if _, err := budgets.UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("negative disruptionsAllowed: %v, want Invalid", err)
	}

	cols, rows := tableOf(t, s, "/apis/policy/v1/namespaces/default/poddisruptionbudgets")
	if cols != "Name Min Available Max Unavailable Allowed Disruptions Age" || len(rows) != 1 ||
		rows[0].Cells[1] != "1" || rows[0].Cells[2] != "N/A" || rows[0].Cells[3] != float64(1) {
		t.Fatalf("table columns %q rows %+v, want kubectl's columns and the budget", cols, rows)
	}

	if err := budgets.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := budgets.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v, want NotFound", err)
	}
}
