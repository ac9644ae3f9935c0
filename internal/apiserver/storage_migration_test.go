package apiserver

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/etcdtest"
)

// TestNodesStoredByEarlierBerthMoveToKubeAPIServersKey starts an API server
// on a store laid out as earlier berth left it (Nodes under
// /registry/nodes/): every Node is served, now from /registry/minions/,
// and nothing is left at the old key. A Node found at both keys keeps the
// new one's object.
func TestNodesStoredByEarlierBerthMoveToKubeAPIServersKey(t *testing.T) {
	t.Parallel()
	st := etcdtest.New(t)
	first := newTestServerWith(t, func(c *Config) { c.Store = st })
	createNodes(t, first, "node-a", "node-b")
	ctx := context.Background()
	// The earlier layout: node-a and node-b back at /registry/nodes/, and
	// node-b also (changed) at the new key, as a replica might have written.
	for _, name := range []string{"node-a", "node-b"} {
		kv, err := st.Get(ctx, "/registry/minions/"+name)
		if err != nil {
			t.Fatal(err)
		}
		ops := []store.Op{{Key: "/registry/nodes/" + name, Value: kv.Value}}
		if name == "node-a" {
			ops = append(ops, store.Op{Key: kv.Key, ExpectModRevision: kv.ModRevision})
		}
		if _, err := st.Txn(ctx, ops); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := first.client.CoreV1().Nodes().Patch(ctx, "node-b", "application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"kept":"new"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	second := newTestServerWith(t, func(c *Config) { c.Store = st })
	nodes, err := second.client.CoreV1().Nodes().List(testContext(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("%d nodes served after the move, want node-a and node-b", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if n.Name == "node-b" && n.Labels["kept"] != "new" {
			t.Errorf("node-b %v: the object at the new key should win", n.Labels)
		}
	}
	old, err := st.List(ctx, "/registry/nodes/", store.ListOptions{})
	if err != nil || len(old.KVs) != 0 {
		t.Fatalf("left under /registry/nodes/: %v (%v)", old.KVs, err)
	}
}
