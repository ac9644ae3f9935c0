package apiserver

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDynamicCRUDEveryResource drives create, get, list, update and delete
// of every served resource through client-go's dynamic client.
func TestDynamicCRUDEveryResource(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	cases := []struct {
		gvr  schema.GroupVersionResource
		obj  map[string]any
		edit func(u *unstructured.Unstructured)
	}{
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"},
			obj: map[string]any{"kind": "Namespace", "apiVersion": "v1"}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"},
			obj: map[string]any{"kind": "Pod", "apiVersion": "v1", "spec": map[string]any{
				"containers": []any{map[string]any{"name": "c", "image": "busybox:1.36"}}}}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "nodes"},
			obj: map[string]any{"kind": "Node", "apiVersion": "v1"}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "events"},
			obj: map[string]any{"kind": "Event", "apiVersion": "v1", "reason": "Test",
				"involvedObject": map[string]any{"kind": "Pod", "name": "x", "namespace": "default"}}},
		{gvr: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"},
			obj: map[string]any{"kind": "Event", "apiVersion": "events.k8s.io/v1", "reason": "Test",
				"eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "berth/test", "reportingInstance": "i", "action": "Test"}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			obj: map[string]any{"kind": "ConfigMap", "apiVersion": "v1", "data": map[string]any{"k": "v"}}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"},
			obj: map[string]any{"kind": "Secret", "apiVersion": "v1", "stringData": map[string]any{"k": "v"}}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"},
			obj: map[string]any{"kind": "ServiceAccount", "apiVersion": "v1"}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "services"},
			obj: map[string]any{"kind": "Service", "apiVersion": "v1", "spec": map[string]any{
				"type": "NodePort", "ports": []any{map[string]any{"port": int64(80)}}}}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "endpoints"},
			obj: map[string]any{"kind": "Endpoints", "apiVersion": "v1", "subsets": []any{map[string]any{
				"addresses": []any{map[string]any{"ip": "192.0.2.1"}}, "ports": []any{map[string]any{"port": int64(80)}}}}}},
		{gvr: schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
			obj: map[string]any{"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1", "addressType": "IPv4",
				"endpoints": []any{map[string]any{"addresses": []any{"192.0.2.1"}}}}},
		{gvr: schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
			obj: map[string]any{"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "spec": map[string]any{"holderIdentity": "a"}}},
		{gvr: schema.GroupVersionResource{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"},
			obj: map[string]any{"kind": "CertificateSigningRequest", "apiVersion": "certificates.k8s.io/v1", "spec": map[string]any{
				"request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K", "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
				"usages": []any{"client auth"}}}},
		// batch/v1 Jobs orphan their pods on delete by default, which holds
		// them for the collector this server lacks: TestJobDeleteOrphansByDefault.
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			obj: map[string]any{"kind": "Deployment", "apiVersion": "apps/v1", "spec": crudWorkloadSpec()}},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"},
			obj: map[string]any{"kind": "ReplicaSet", "apiVersion": "apps/v1", "spec": crudWorkloadSpec()}},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
			obj: map[string]any{"kind": "StatefulSet", "apiVersion": "apps/v1", "spec": crudWorkloadSpec()}},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"},
			obj: map[string]any{"kind": "DaemonSet", "apiVersion": "apps/v1", "spec": crudWorkloadSpec()}},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "controllerrevisions"},
			obj: map[string]any{"kind": "ControllerRevision", "apiVersion": "apps/v1", "revision": int64(1), "data": map[string]any{"spec": map[string]any{}}}},
		{gvr: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"},
			obj: map[string]any{"kind": "CronJob", "apiVersion": "batch/v1", "spec": map[string]any{"schedule": "@hourly",
				"jobTemplate": map[string]any{"spec": map[string]any{"template": crudPodTemplate("Never")}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.gvr.Group+"/"+tc.gvr.Resource, func(t *testing.T) {
			namespaced := tc.gvr.Resource != "namespaces" && tc.gvr.Resource != "nodes" && tc.gvr.Resource != "certificatesigningrequests"
			res := resourceClient(s, tc.gvr, namespaced)
			obj := &unstructured.Unstructured{Object: tc.obj}
			obj.SetName("crud-1")
			obj.SetLabels(map[string]string{"suite": "crud"})
			created, err := res.Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if created.GetUID() == "" || created.GetResourceVersion() == "" {
				t.Fatalf("create returned no uid/resourceVersion: %v", created.Object)
			}
			got, err := res.Get(ctx, "crud-1", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			list, err := res.List(ctx, metav1.ListOptions{LabelSelector: "suite=crud"})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(list.Items) != 1 || list.Items[0].GetName() != "crud-1" {
				t.Fatalf("list by label = %d items, want crud-1 only", len(list.Items))
			}
			got.SetAnnotations(map[string]string{"edited": "yes"})
			updated, err := res.Update(ctx, got, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if updated.GetAnnotations()["edited"] != "yes" || updated.GetResourceVersion() == got.GetResourceVersion() {
				t.Fatalf("update not applied: annotations=%v rv %s -> %s", updated.GetAnnotations(), got.GetResourceVersion(), updated.GetResourceVersion())
			}
			if err := res.Delete(ctx, "crud-1", metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if tc.gvr.Resource == "namespaces" {
				return // deletion finishes asynchronously; see the namespace tests
			}
			if _, err := res.Get(ctx, "crud-1", metav1.GetOptions{}); !isNotFound(err) {
				t.Fatalf("get after delete: %v, want NotFound", err)
			}
		})
	}
}

func resourceClient(s *testServer, gvr schema.GroupVersionResource, namespaced bool) dynamic.ResourceInterface {
	if namespaced {
		return s.dynamic.Resource(gvr).Namespace("default")
	}
	return s.dynamic.Resource(gvr)
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// crudWorkloadSpec is an apps/v1 workload's spec selecting its template's pods.
func crudWorkloadSpec() map[string]any {
	return map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "crud"}}, "template": crudPodTemplate("Always")}
}

func crudPodTemplate(restartPolicy string) map[string]any {
	return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "crud"}},
		"spec": map[string]any{"restartPolicy": restartPolicy, "containers": []any{map[string]any{"name": "c", "image": "busybox:1.36"}}}}
}
