package apiserver

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestStorageKindsAsKubeAPIServer serves storage.k8s.io/v1's CSI kinds as
// kube-apiserver does: upstream's defaults (a CSIDriver's attach and
// lifecycle defaults), validation, status subresources that keep the spec,
// upstream's keys and kubectl's columns.
func TestStorageKindsAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	storage := s.client.StorageV1()

	driver, err := storage.CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create CSIDriver: %v", err)
	}
	if driver.Spec.AttachRequired == nil || !*driver.Spec.AttachRequired || len(driver.Spec.VolumeLifecycleModes) != 1 ||
		driver.Spec.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		t.Errorf("CSIDriver spec %+v, want upstream's defaults (attachRequired, Persistent)", driver.Spec)
	}
	if kv, err := s.store.Get(ctx, "/registry/csidrivers/csi.example.com"); err != nil || len(kv.Value) == 0 {
		t.Fatalf("kube-apiserver's key /registry/csidrivers/csi.example.com: %q, %v", kv.Value, err)
	}
	_, err = storage.CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Driver"}}, metav1.CreateOptions{})
	expectInvalidFields(t, "a CSIDriver name that is not a DNS name", err, "metadata.name")

	_, err = storage.CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "csi.example.com"}}}}, metav1.CreateOptions{})
	expectInvalidFields(t, "a CSINode driver without a node ID", err, "spec.drivers[0].nodeID")

	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "node-a",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}
	created, err := storage.VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create VolumeAttachment: %v", err)
	}
	if created.Status.Attached {
		t.Errorf("create kept the status %+v; upstream's strategy clears it", created.Status)
	}
	created.Status.Attached = true
	created.Spec.NodeName = "node-b"
	attached, err := storage.VolumeAttachments().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil || !attached.Status.Attached || attached.Spec.NodeName != "node-a" {
		t.Fatalf("update status: %v, %+v; want attached with the spec unchanged", err, attached)
	}

	cols, rows := tableOf(t, s, "/apis/storage.k8s.io/v1/volumeattachments/va-1")
	if cols != "Name Attacher PV Node Attached Age" || len(rows) != 1 || rows[0].Cells[2] != "pv-1" || rows[0].Cells[4] != true {
		t.Fatalf("VolumeAttachment table columns %q rows %+v, want upstream's", cols, rows)
	}
}
