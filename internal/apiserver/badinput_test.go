package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rawRequest sends body to path and decodes the Status the server answers.
func rawRequest(t *testing.T, s *testServer, method, path, contentType string, body []byte) (int, metav1.Status) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var status metav1.Status
	_ = json.Unmarshal(data, &status)
	return resp.StatusCode, status
}

func TestBadInputIsRejectedAndWritesNothing(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, testPod("existing"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	podJSON := func(mutate func(p *corev1.Pod)) []byte {
		p := testPod("bad")
		p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		mutate(p)
		return mustJSON(t, p)
	}
	huge := podJSON(func(p *corev1.Pod) { p.Annotations = map[string]string{"a": strings.Repeat("x", 4<<20)} })
	const podsPath = "/api/v1/namespaces/default/pods"
	cases := []struct {
		name, method, path, contentType string
		body                            []byte
		code                            int
		reason                          metav1.StatusReason
		causeField                      string
	}{
		{"malformed json", "POST", podsPath, "application/json", []byte(`{"kind":"Pod",`), 400, metav1.StatusReasonBadRequest, ""},
		{"malformed protobuf", "POST", podsPath, "application/vnd.kubernetes.protobuf", []byte("k8s\x00garbage"), 400, metav1.StatusReasonBadRequest, ""},
		{"oversized body", "POST", podsPath, "application/json", huge, 413, metav1.StatusReasonRequestEntityTooLarge, ""},
		{"unknown resource", "POST", "/api/v1/namespaces/default/gizmos", "application/json", []byte(`{}`), 404, metav1.StatusReasonNotFound, ""},
		{"unknown group", "GET", "/apis/example.com/v1/widgets", "application/json", nil, 404, metav1.StatusReasonNotFound, ""},
		{"no containers", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) { p.Spec.Containers = nil }), 422, metav1.StatusReasonInvalid, "spec.containers"},
		{"invalid name", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) { p.Name = "Not_A_Name" }), 422, metav1.StatusReasonInvalid, "metadata.name"},
		{"duplicate container names", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0]) }), 422, metav1.StatusReasonInvalid, "spec.containers[1].name"},
		{"negative quantity", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("-1")}
			}), 422, metav1.StatusReasonInvalid, "spec.containers[0].resources.requests[cpu]"},
		{"bad port", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}} }), 422, metav1.StatusReasonInvalid, "spec.containers[0].ports[0].containerPort"},
		{"missing image", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }), 422, metav1.StatusReasonInvalid, "spec.containers[0].image"},
		{"bound while gated", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) {
				p.Spec.NodeName = "n1"
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
			}), 422, metav1.StatusReasonInvalid, "spec.nodeName"},
		{"duplicate scheduling gates", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) {
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}, {Name: "example.com/quota"}}
			}), 422, metav1.StatusReasonInvalid, "spec.schedulingGates[1]"},
		{"a scheduling gate added", "PATCH", podsPath + "/existing", "application/merge-patch+json",
			[]byte(`{"spec":{"schedulingGates":[{"name":"example.com/late"}]}}`), 422, metav1.StatusReasonInvalid, "spec.schedulingGates[0].name"},
		{"bad affinity selector", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}},
				}}}}
			}), 422, metav1.StatusReasonInvalid, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator"},
		{"spread without a topology key", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule}}
			}), 422, metav1.StatusReasonInvalid, "spec.topologySpreadConstraints[0].topologyKey"},
		{"already exists", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) { p.Name = "existing" }), 409, metav1.StatusReasonAlreadyExists, ""},
		{"namespace mismatch", "POST", podsPath, "application/json",
			podJSON(func(p *corev1.Pod) { p.Namespace = "kube-system" }), 400, metav1.StatusReasonBadRequest, ""},
		{"immutable spec", "PATCH", podsPath + "/existing", "application/merge-patch+json",
			[]byte(`{"spec":{"containers":[{"name":"c","image":"busybox","command":["sh"]}]}}`), 422, metav1.StatusReasonInvalid, "spec"},
		{"stale resourceVersion", "PATCH", podsPath + "/existing", "application/merge-patch+json",
			[]byte(`{"metadata":{"resourceVersion":"1","labels":{"x":"y"}}}`), 409, metav1.StatusReasonConflict, ""},
		{"unsupported patch type", "PATCH", podsPath + "/existing", "application/xml", []byte(`<x/>`), 415, metav1.StatusReasonUnsupportedMediaType, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := storeRevision(t, s)
			code, status := rawRequest(t, s, tc.method, tc.path, tc.contentType, tc.body)
			if code != tc.code || status.Code != int32(tc.code) || status.Reason != tc.reason {
				t.Fatalf("got HTTP %d, Status code %d reason %q (%s); want %d %q", code, status.Code, status.Reason, status.Message, tc.code, tc.reason)
			}
			if tc.causeField != "" && !hasCause(status, tc.causeField) {
				t.Fatalf("no cause for field %s in %+v", tc.causeField, status.Details)
			}
			assertStoreUnchanged(t, s, before)
		})
	}
}

func hasCause(status metav1.Status, field string) bool {
	if status.Details == nil {
		return false
	}
	for _, c := range status.Details.Causes {
		if c.Field == field {
			return true
		}
	}
	return false
}

func TestDeletePreconditions(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pre"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := storeRevision(t, s)
	stale := "1"
	err := cms.Delete(ctx, "pre", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with stale precondition: %v, want 409", err)
	}
	assertStoreUnchanged(t, s, before)
	if err := cms.Delete(ctx, "nothere", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("delete of a missing object: %v, want 404", err)
	}
}
