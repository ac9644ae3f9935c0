package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func resourceQuantity(s string) apiresource.Quantity { return apiresource.MustParse(s) }

// storeRevision is the store's current revision: any write moves it.
func storeRevision(t *testing.T, s *testServer) int64 {
	t.Helper()
	rev, err := s.store.CurrentRevision(context.Background())
	if err != nil {
		t.Fatalf("store revision: %v", err)
	}
	return rev
}

// assertStoreUnchanged fails if anything was written since before.
func assertStoreUnchanged(t *testing.T, s *testServer, before int64) {
	t.Helper()
	if after := storeRevision(t, s); after != before {
		t.Fatalf("store revision moved %d -> %d: a rejected request wrote", before, after)
	}
}

func ioCopy(dst *strings.Builder, resp *http.Response) (int64, error) {
	return io.Copy(dst, resp.Body)
}

// createNodes registers nodes with room for test pods: binding (and creating
// a pod already bound) checks the node exists and has capacity.
func createNodes(t *testing.T, s *testServer, names ...string) {
	t.Helper()
	for _, name := range names {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resourceQuantity("8"), corev1.ResourceMemory: resourceQuantity("16Gi"), corev1.ResourcePods: resourceQuantity("110"),
		}}}
		if _, err := s.client.CoreV1().Nodes().Create(testContext(t), node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", name, err)
		}
	}
}

// tableOf GETs path as a meta.k8s.io Table, as kubectl asks for it, and
// returns its column names (joined by spaces) and rows.
func tableOf(t *testing.T, s *testServer, path string) (string, []metav1.TableRow) {
	t.Helper()
	code, _, body := getWithAccept(t, s, path, "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	var table metav1.Table
	if code != 200 || json.Unmarshal(body, &table) != nil || table.Kind != "Table" {
		t.Fatalf("%s as a Table: %d %s", path, code, body)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	return strings.Join(cols, " "), table.Rows
}
