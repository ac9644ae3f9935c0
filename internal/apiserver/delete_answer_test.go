package apiserver

import (
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A delete that removes the object answers as upstream's store does: a
// Success Status naming the object, except for the resources whose upstream
// store returns the deleted object (pods among them).
func TestDeleteAnswersAsUpstream(t *testing.T) {
	s := newTestServer(t)
	ctx := testContext(t)
	cm, err := s.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	code, status := rawRequest(t, s, "DELETE", "/api/v1/namespaces/default/configmaps/gone", "application/json", nil)
	if code != 200 || status.Kind != "Status" || status.Status != metav1.StatusSuccess || status.Details == nil ||
		status.Details.Name != "gone" || status.Details.Kind != "configmaps" || status.Details.UID != cm.UID {
		t.Errorf("configmap delete answered HTTP %d %+v, want 200 and a Success Status naming configmaps gone %s", code, status, cm.UID)
	}
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, testPod("gone"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, status = rawRequest(t, s, "DELETE", "/api/v1/namespaces/default/pods/gone", "application/json", nil)
	if code != 200 || status.Kind != "Pod" {
		t.Errorf("pod delete answered HTTP %d kind %q, want 200 and the Pod", code, status.Kind)
	}
}

// Deleting a namespace answers with it Terminating, its deletionTimestamp
// set and, as upstream's namespace storage, no deletionGracePeriodSeconds.
func TestNamespaceDeleteAnswersTerminatingWithoutGracePeriod(t *testing.T) {
	s := newTestServer(t)
	ctx := testContext(t)
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodDelete, s.url+"/api/v1/namespaces/leaving", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ns corev1.Namespace
	if err := json.NewDecoder(resp.Body).Decode(&ns); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil || ns.DeletionGracePeriodSeconds != nil {
		t.Errorf("namespace delete answered HTTP %d phase %q deletionTimestamp %v deletionGracePeriodSeconds %v, want 200 Terminating, a timestamp and no grace period",
			resp.StatusCode, ns.Status.Phase, ns.DeletionTimestamp, ns.DeletionGracePeriodSeconds)
	}
}
