package apiserver

import (
	"encoding/json"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
)

func TestEveryPatchType(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("patched"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	cases := []struct {
		name  string
		typ   types.PatchType
		patch string
		check func(p *corev1.Pod) bool
	}{
		{"json", types.JSONPatchType, `[{"op":"add","path":"/metadata/labels/json","value":"yes"}]`,
			func(p *corev1.Pod) bool { return p.Labels["json"] == "yes" }},
		{"merge", types.MergePatchType, `{"metadata":{"labels":{"merge":"yes"}}}`,
			func(p *corev1.Pod) bool { return p.Labels["merge"] == "yes" && p.Labels["json"] == "yes" }},
		// A strategic merge patch merges the containers list by name; a
		// merge patch would replace it.
		{"strategic", types.StrategicMergePatchType, `{"spec":{"containers":[{"name":"c","image":"busybox:1.37"}]}}`,
			func(p *corev1.Pod) bool {
				return p.Spec.Containers[0].Image == "busybox:1.37" && p.Spec.Containers[0].TerminationMessagePath != ""
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pods.Patch(ctx, "patched", tc.typ, []byte(tc.patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			if !tc.check(got) {
				t.Fatalf("patch not applied: labels=%v containers=%+v", got.Labels, got.Spec.Containers)
			}
		})
	}
	t.Run("apply", func(t *testing.T) {
		cfg := corev1apply.Pod("patched", "default").WithLabels(map[string]string{"applied": "yes"})
		got, err := pods.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "test", Force: true})
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		if got.Labels["applied"] != "yes" || got.Labels["merge"] != "yes" {
			t.Fatalf("apply not merged: %v", got.Labels)
		}
		found := false
		for _, m := range got.ManagedFields {
			found = found || (m.Manager == "test" && m.Operation == metav1.ManagedFieldsOperationApply)
		}
		if !found {
			t.Fatalf("no managedFields entry for the apply: %+v", got.ManagedFields)
		}
	})
	t.Run("immutable-field", func(t *testing.T) {
		before := storeRevision(t, s)
		_, err := pods.Patch(ctx, "patched", types.MergePatchType, []byte(`{"spec":{"restartPolicy":"Never"}}`), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("patching restartPolicy: %v, want 422 Invalid", err)
		}
		assertStoreUnchanged(t, s, before)
	})
}

func TestStaleUpdateConflicts(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	first := cm.DeepCopy()
	first.Data["a"] = "2"
	if _, err := cms.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("first update: %v", err)
	}
	before := storeRevision(t, s)
	stale := cm.DeepCopy()
	stale.Data["a"] = "3"
	_, err = cms.Update(ctx, stale, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v, want 409 Conflict", err)
	}
	assertStoreUnchanged(t, s, before)
	got, _ := cms.Get(ctx, "cm", metav1.GetOptions{})
	if got.Data["a"] != "2" {
		t.Fatalf("data = %v after a rejected update", got.Data)
	}
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("duplicate create: %v, want 409 AlreadyExists", err)
	}
	assertStoreUnchanged(t, s, before)
}

func TestStatusSplit(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, testPod("split"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	// The main resource ignores status changes.
	pod.Status.Phase = corev1.PodRunning
	pod.Labels["main"] = "yes"
	pod, err = pods.Update(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if pod.Status.Phase != corev1.PodPending || pod.Labels["main"] != "yes" || pod.Generation != 1 {
		t.Fatalf("main update: phase=%s labels=%v generation=%d, want Pending, the label, generation 1", pod.Status.Phase, pod.Labels, pod.Generation)
	}
	pod.Spec.Containers[0].Image = "busybox:2"
	if pod, err = pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil || pod.Generation != 2 {
		t.Fatalf("spec update: %v, generation %d, want 2", err, pod.Generation)
	}
	pod.Spec.Containers[0].Image = "busybox"
	if pod, err = pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil || pod.Generation != 3 {
		t.Fatalf("spec update back: %v, generation %d, want 3", err, pod.Generation)
	}
	// The status subresource changes only status.
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = "10.0.0.5"
	pod.Spec.Containers[0].Image = "busybox:9"
	pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP != "10.0.0.5" || pod.Spec.Containers[0].Image != "busybox" {
		t.Fatalf("status update: phase=%s ip=%s image=%s", pod.Status.Phase, pod.Status.PodIP, pod.Spec.Containers[0].Image)
	}
	// Nodes register with their status (as the kubelet does).
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Capacity: corev1.ResourceList{corev1.ResourcePods: resourceQuantity("110")}}}
	created, err := s.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node: %v", err)
	}
	if q := created.Status.Capacity[corev1.ResourcePods]; q.String() != "110" {
		t.Fatalf("node capacity = %v, want it kept on create", created.Status.Capacity)
	}
}

func TestBinding(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")
	createNodes(t, s, "n1", "n2")
	if _, err := pods.Create(ctx, testPod("bindme"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bindme"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	got, _ := pods.Get(ctx, "bindme", metav1.GetOptions{})
	if got.Spec.NodeName != "n1" {
		t.Fatalf("nodeName = %q after binding", got.Spec.NodeName)
	}
	before := storeRevision(t, s)
	binding.Target.Name = "n2"
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("second bind: %v, want 409 Conflict", err)
	}
	assertStoreUnchanged(t, s, before)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCSRRecordsRequesterAndApproves(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	csrs := s.client.CertificatesV1().CertificateSigningRequests()
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "node-csr-Ab_9"}, // the kubelet's names are base64url
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    []byte("-----BEGIN CERTIFICATE REQUEST-----\n-----END CERTIFICATE REQUEST-----\n"),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
			Username:   "someone-else",
		},
	}
	created, err := csrs.Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.Spec.Username != "admin" || len(created.Spec.Groups) != 1 || created.Spec.Groups[0] != "system:masters" {
		t.Fatalf("requester = %q %v, want the authenticated admin", created.Spec.Username, created.Spec.Groups)
	}
	created.Status.Conditions = append(created.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"})
	created.Status.Certificate = []byte("not for approvers to set")
	approved, err := csrs.UpdateApproval(ctx, "node-csr-Ab_9", created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	if len(approved.Status.Conditions) != 1 || approved.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
		t.Fatalf("conditions after approval: %+v", approved.Status.Conditions)
	}
	if len(approved.Status.Certificate) != 0 {
		t.Fatalf("approval set the certificate")
	}
}

// TestEventsShareStorage: an events.k8s.io/v1 Event is a core/v1 Event too.
func TestEventsShareStorage(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "e1"}, EventTime: metav1.NowMicro(),
		ReportingController: "berth/scheduler", ReportingInstance: "i1", Action: "Binding", Reason: "Scheduled",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}, Note: "assigned", Type: "Normal",
	}
	if _, err := s.client.EventsV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create events/v1: %v", err)
	}
	core, err := s.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
	if err != nil || len(core.Items) != 1 {
		t.Fatalf("core/v1 list by involvedObject.name: %v %v", err, core)
	}
	if e := core.Items[0]; e.Message != "assigned" || e.InvolvedObject.Name != "web" || e.ReportingController != "berth/scheduler" {
		t.Fatalf("core/v1 view: %+v", e)
	}
	back, err := s.client.EventsV1().Events("default").Get(ctx, "e1", metav1.GetOptions{})
	if err != nil || back.Note != "assigned" || back.Regarding.Name != "web" {
		t.Fatalf("events/v1 read back: %v %+v", err, back)
	}
}
