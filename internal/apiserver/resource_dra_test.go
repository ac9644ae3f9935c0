package apiserver

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestResourceKindsAsKubeAPIServer serves resource.k8s.io/v1 as
// kube-apiserver does: upstream's defaults and validation (an immutable
// claim spec; admin access only in a namespace labelled for it, read
// through the namespace store), status that keeps the spec, the taint
// rules stored as v1beta2 (upstream's storage version), the slices'
// node field selector, upstream's keys and kubectl's columns.
func TestResourceKindsAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	dra := s.client.ResourceV1()

	if _, err := dra.DeviceClasses().Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DeviceClass: %v", err)
	}
	if kv, err := s.store.Get(ctx, "/registry/deviceclasses/gpu.example.com"); err != nil || len(kv.Value) == 0 {
		t.Fatalf("kube-apiserver's key /registry/deviceclasses/gpu.example.com: %q, %v", kv.Value, err)
	}

	request := func(admin bool) resourcev1.DeviceRequest {
		exactly := &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}
		if admin {
			exactly.AdminAccess = ptr.To(true)
		}
		return resourcev1.DeviceRequest{Name: "gpu", Exactly: exactly}
	}
	claim := func(name string, admin bool) *resourcev1.ResourceClaim {
		return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{request(admin)}}}}
	}
	created, err := dra.ResourceClaims("default").Create(ctx, claim("one-gpu", false), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ResourceClaim: %v", err)
	}
	if got := created.Spec.Devices.Requests[0].Exactly; got.AllocationMode != resourcev1.DeviceAllocationModeExactCount || got.Count != 1 {
		t.Errorf("request %+v, want upstream's defaults (ExactCount, count 1)", got)
	}
	created.Spec.Devices.Requests[0].Exactly.Count = 2
	_, err = dra.ResourceClaims("default").Update(ctx, created, metav1.UpdateOptions{})
	expectInvalidFields(t, "a change to a claim's spec", err, "spec")

	_, err = dra.ResourceClaims("default").Create(ctx, claim("admin", true), metav1.CreateOptions{})
	expectInvalidFields(t, "admin access in a namespace not labelled for it", err, "spec.devices.requests[0].adminAccess")
	admins := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dra-admins", Labels: map[string]string{"resource.kubernetes.io/admin-access": "true"}}}
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, admins, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if _, err := dra.ResourceClaims("dra-admins").Create(ctx, claim("admin", true), metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin access in a namespace labelled for it: %v", err)
	}

	rule, err := dra.DeviceTaintRules().Create(ctx, &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		Spec: resourcev1.DeviceTaintRuleSpec{DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To("gpu.example.com")},
			Taint: resourcev1.DeviceTaint{Key: "example.com/broken", Effect: resourcev1.DeviceTaintEffectNoSchedule}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create DeviceTaintRule: %v", err)
	}
	if kv, err := s.store.Get(ctx, "/registry/devicetaintrules/broken"); err != nil || !bytes.Contains(kv.Value, []byte("resource.k8s.io/v1beta2")) {
		t.Fatalf("DeviceTaintRule stored as %q, %v; want resource.k8s.io/v1beta2, kube-apiserver's storage version", kv.Value, err)
	}
	rule.Status.Conditions = []metav1.Condition{{Type: "EvictionInProgress", Status: metav1.ConditionFalse, Reason: "NoEffect",
		LastTransitionTime: metav1.Now(), ObservedGeneration: rule.Generation}}
	rule.Spec.Taint.Key = "example.com/changed"
	updated, err := dra.DeviceTaintRules().UpdateStatus(ctx, rule, metav1.UpdateOptions{})
	if err != nil || len(updated.Status.Conditions) != 1 || updated.Spec.Taint.Key != "example.com/broken" {
		t.Fatalf("update status: %v, %+v; want the condition with the spec unchanged", err, updated)
	}

	for _, node := range []string{"node-a", "node-b"} {
		slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.example.com", NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0"}}}}
		if _, err := dra.ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ResourceSlice on %s: %v", node, err)
		}
	}
	slices, err := dra.ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-b"})
	if err != nil || len(slices.Items) != 1 || slices.Items[0].Name != "node-b-gpus" {
		t.Fatalf("slices of node-b: %v, %+v; want node-b-gpus alone", err, slices)
	}

	cols, rows := tableOf(t, s, "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/one-gpu")
	if cols != "Name State Age" || len(rows) != 1 || rows[0].Cells[1] != "pending" {
		t.Fatalf("ResourceClaim table columns %q rows %+v, want upstream's", cols, rows)
	}
}
