package apiserver

import (
	"bytes"
	"testing"

	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStorageVersionMigrationsAsKubeAPIServer serves StorageVersionMigrations
// as kube-apiserver does: upstream's validation (the spec is immutable; the
// status only through its subresource), v1beta1 as the stored version under
// kube-apiserver's key, and kubectl's columns.
func TestStorageVersionMigrationsAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	migrations := s.client.StoragemigrationV1().StorageVersionMigrations()

	created, err := migrations.Create(ctx, &svmv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "deployments"},
		Spec: svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "apps", Resource: "deployments"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create StorageVersionMigration: %v", err)
	}
	if kv, err := s.store.Get(ctx, "/registry/storageversionmigrations/deployments"); err != nil || !bytes.Contains(kv.Value, []byte("storagemigration.k8s.io/v1beta1")) {
		t.Fatalf("StorageVersionMigration stored as %q, %v; want storagemigration.k8s.io/v1beta1 under kube-apiserver's key", kv.Value, err)
	}
	changed := created.DeepCopy()
	changed.Spec.Resource.Resource = "statefulsets"
	_, err = migrations.Update(ctx, changed, metav1.UpdateOptions{})
	expectInvalidFields(t, "a change to a migration's spec", err, "spec")

	running := created.DeepCopy()
	running.Status.Conditions = []metav1.Condition{{Type: "Running", Status: metav1.ConditionTrue, Reason: "Started", Message: "migrating",
		LastTransitionTime: metav1.Now()}}
	if _, err := migrations.Update(ctx, running, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update through the main resource: %v", err)
	}
	got, err := migrations.Get(ctx, "deployments", metav1.GetOptions{})
	if err != nil || len(got.Status.Conditions) != 0 {
		t.Fatalf("after an update of the main resource: %v, status %+v; want no change to the status", err, got.Status)
	}
	got.Status = running.Status
	if _, err := migrations.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	cols, rows := tableOf(t, s, "/apis/storagemigration.k8s.io/v1/storageversionmigrations/deployments")
	if cols != "Name Resource Status" || len(rows) != 1 || rows[0].Cells[1] != "deployments.apps" || rows[0].Cells[2] != "Running" {
		t.Fatalf("StorageVersionMigration table columns %q rows %+v, want upstream's", cols, rows)
	}
}
