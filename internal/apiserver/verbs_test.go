package apiserver

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeleteCollectionBySelector(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	for _, name := range []string{"a", "b", "c"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"drop": fmt.Sprint(name != "c")}}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "drop=true"}); err != nil {
		t.Fatalf("deletecollection: %v", err)
	}
	left, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(left.Items) != 1 || left.Items[0].Name != "c" {
		t.Fatalf("left after deletecollection: %v %v, want only c", err, left)
	}
}

func TestEviction(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("evictee"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evictee", Namespace: "default"}}
	if err := pods.EvictV1(ctx, eviction); err != nil {
		t.Fatalf("evict: %v", err)
	}
	if _, err := pods.Get(ctx, "evictee", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("evicted unbound pod: %v, want NotFound", err)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	before := storeRevision(t, s)
	got, err := s.client.CoreV1().Pods("default").Create(ctx, testPod("dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	if got.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("dry-run result not defaulted: %+v", got.Spec)
	}
	assertStoreUnchanged(t, s, before)
}

func TestYAMLInAndOut(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	body := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yamly\ndata:\n  k: v\n")
	code, status := rawRequest(t, s, "POST", "/api/v1/namespaces/default/configmaps", "application/yaml", body)
	if code != 201 {
		t.Fatalf("YAML create: %d %+v", code, status)
	}
	code, ctype, out := getWithAccept(t, s, "/api/v1/namespaces/default/configmaps/yamly", "application/yaml")
	if code != 200 || ctype != "application/yaml" || !strings.Contains(string(out), "name: yamly") || !strings.Contains(string(out), "k: v") {
		t.Fatalf("YAML get: %d %s\n%s", code, ctype, out)
	}
}
