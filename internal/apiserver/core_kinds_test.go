package apiserver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestReplicationControllerScale reads and writes a ReplicationController's
// replicas through its scale subresource, as kubectl scale and the
// autoscalers do, with upstream's validation and preconditions.
func TestReplicationControllerScale(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	rcs := s.client.CoreV1().ReplicationControllers("default")
	rc, err := rcs.Create(ctx, &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "web"}, Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if rc.Spec.Replicas == nil || *rc.Spec.Replicas != 1 {
		t.Fatalf("spec.replicas defaults to 1, got %v", rc.Spec.Replicas)
	}
	scale, err := rcs.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" || scale.UID != rc.UID {
		t.Fatalf("scale = %+v, want 1 replica, selector app=web, the controller's uid", scale)
	}
	scale.Spec.Replicas = 3
	if _, err := rcs.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update scale: %v", err)
	}
	if got, _ := rcs.Get(ctx, "web", metav1.GetOptions{}); got == nil || *got.Spec.Replicas != 3 {
		t.Fatalf("the controller's replicas after scaling to 3: %v", got)
	}
	// The scale's resourceVersion is a precondition: the stale one conflicts.
	if _, err := rcs.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update with a stale resourceVersion: %v, want a conflict", err)
	}
	patch := []byte(`{"spec":{"replicas":-1}}`)
	_, err = rcs.Patch(ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicas") {
		t.Fatalf("negative replicas: %v, want Invalid on spec.replicas", err)
	}
	if _, err := rcs.GetScale(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("scale of a missing controller: %v, want NotFound", err)
	}
}

// TestCoreKindsUseUpstreamRules creates each newly served core kind once
// valid and once invalid: the defaults and the refusals are upstream's.
func TestCoreKindsUseUpstreamRules(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	core := s.client.CoreV1()

	pv, err := core.PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/pv-1"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pv: %v", err)
	}
	if pv.Status.Phase != corev1.VolumePending || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Fatalf("pv status %q reclaim %q, want Pending and Retain", pv.Status.Phase, pv.Spec.PersistentVolumeReclaimPolicy)
	}
	_, err = core.PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-2"}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.capacity", "")
	wantInvalid(t, err, "spec.accessModes", "")

	pvc, err := core.PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("1Gi")}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pvc: %v", err)
	}
	if pvc.Spec.VolumeMode == nil || *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Fatalf("pvc volumeMode %v, want Filesystem", pvc.Spec.VolumeMode)
	}
	_, err = core.PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.accessModes", "")
	wantInvalid(t, err, "spec.resources[storage]", "")

	_, err = core.ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: apiresource.MustParse("-1")}},
	}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.hard[pods]", "")
	_, err = core.LimitRanges("default").Create(ctx, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "l"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Max: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("100m")}, Min: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("200m")}}}},
	}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.limits[0].min[cpu]", "")
	_, err = core.PodTemplates("default").Create(ctx, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t"},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}}, metav1.CreateOptions{})
	wantInvalid(t, err, "template.spec.containers[0].image", "")
	_, err = core.ReplicationControllers("default").Create(ctx, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "rc"},
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](1)}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.template", "")
}

// TestEphemeralContainersSubresource adds a debug container to a running
// pod's spec through pods/ephemeralcontainers, as kubectl debug does; the
// pod itself cannot change them, and the subresource changes nothing else.
func TestEphemeralContainersSubresource(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "debugged"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", Stdin: true, TTY: true, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy: corev1.PullIfNotPresent}, TargetContainerName: "app"}}
	pod.Labels = map[string]string{"ignored": "yes"}
	got, err := pods.UpdateEphemeralContainers(ctx, "debugged", pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update ephemeral containers: %v", err)
	}
	if len(got.Spec.EphemeralContainers) != 1 || got.Spec.EphemeralContainers[0].Name != "debug" || got.Labels["ignored"] != "" {
		t.Fatalf("ephemeral containers %+v labels %v: want the debug container and no label", got.Spec.EphemeralContainers, got.Labels)
	}
	// Through the pod itself they cannot change.
	got.Spec.EphemeralContainers = nil
	if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("removing an ephemeral container through the pod: %v, want Invalid", err)
	}
	// Nor can the subresource remove one.
	got.Spec.EphemeralContainers = nil
	if _, err := pods.UpdateEphemeralContainers(ctx, "debugged", got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("removing an ephemeral container: %v, want Invalid", err)
	}
}

// TestProxySubresourcesRefuseAsUpstream reaches pods/proxy, services/proxy
// and nodes/proxy: each locates its target as upstream does and refuses
// with upstream's answers where there is nothing to proxy to.
func TestProxySubresourcesRefuseAsUpstream(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	createNodes(t, s, "node-1") // reports 127.0.0.1
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path string
		code         int
		msg          string
	}{
		{"GET", "/api/v1/namespaces/default/pods/web/proxy/", 400, "address not allowed"}, // no pod IP yet
		{"OPTIONS", "/api/v1/namespaces/default/pods/web:8080/proxy/x", 400, "address not allowed"},
		{"GET", "/api/v1/namespaces/default/pods/missing/proxy", 404, `pods "missing" not found`},
		{"DELETE", "/api/v1/namespaces/default/services/web/proxy/", 503, `no endpoints available for service "web"`},
		{"GET", "/api/v1/namespaces/default/services/web:81/proxy/", 503, `no service port 81 found for service "web"`},
		{"GET", "/api/v1/nodes/node-1/proxy/metrics", 503, "no client identity for node agents"},
	} {
		code, status := rawRequest(t, s, c.method, c.path, "", nil)
		if code != c.code || !strings.Contains(status.Message, c.msg) {
			t.Errorf("%s %s: %d %q, want %d with %q", c.method, c.path, code, status.Message, c.code, c.msg)
		}
	}
}
