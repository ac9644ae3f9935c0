package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestStorageClassCRUD serves storage.k8s.io/v1 StorageClasses as
// kube-apiserver does: cluster-scoped, stored at its key, defaulted and
// validated by upstream's strategy (a provisioner is required, parameters
// and the provisioner immutable), listed by label, deleted as a
// collection, and printed with kubectl's columns.
func TestStorageClassCRUD(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	classes := s.client.StorageV1().StorageClasses()

	sc, err := classes.Create(ctx, &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "local", Labels: map[string]string{"tier": "fast"}},
		Provisioner: "example.com/local", Parameters: map[string]string{"path": "/srv"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("reclaimPolicy %v volumeBindingMode %v, want upstream's defaults Delete and Immediate", sc.ReclaimPolicy, sc.VolumeBindingMode)
	}
	if kv, err := s.store.Get(ctx, "/registry/storageclasses/local"); err != nil || len(kv.Value) == 0 {
		t.Fatalf("kube-apiserver's key /registry/storageclasses/local: %q, %v", kv.Value, err)
	}

	if _, err := classes.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "none"}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "provisioner") {
		t.Errorf("a class without a provisioner: %v, want Invalid on provisioner", err)
	}
	changed := sc.DeepCopy()
	changed.Parameters["path"] = "/elsewhere"
	if _, err := classes.Update(ctx, changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "parameters") {
		t.Errorf("changing parameters: %v, want Invalid (immutable)", err)
	}
	if _, err := classes.Patch(ctx, "local", types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch labels: %v", err)
	}

	cols, rows := tableOf(t, s, "/apis/storage.k8s.io/v1/storageclasses/local")
	if cols != "Name Provisioner ReclaimPolicy VolumeBindingMode AllowVolumeExpansion Age" || len(rows) != 1 || rows[0].Cells[1] != "example.com/local" {
		t.Fatalf("table columns %q rows %+v, want upstream's columns and the class", cols, rows)
	}

	if _, err := classes.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"tier": "fast"}},
		Provisioner: "example.com/other"}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create other: %v", err)
	}
	list, err := classes.List(ctx, metav1.ListOptions{LabelSelector: "tier=fast"})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list tier=fast: %v, %d items, want 2", err, len(list.Items))
	}
	if err := classes.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "tier=fast"}); err != nil {
		t.Fatalf("delete collection: %v", err)
	}
	if list, err := classes.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Fatalf("list after deletecollection: %v, %+v, want none", err, list)
	}
}
