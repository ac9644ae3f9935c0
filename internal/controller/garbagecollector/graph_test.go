package garbagecollector

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	pods       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodes      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

func ownedBy(owner node, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: owner.kind.Kind, Name: owner.name, UID: owner.uid, BlockOwnerDeletion: &block}
}

func configMap(ns, name string) node {
	return node{uid: types.UID(ns + "/" + name), resource: configMaps, kind: schema.GroupKind{Kind: "ConfigMap"}, namespace: ns, name: name}
}

func pod(ns, name string, owners ...metav1.OwnerReference) node {
	return node{uid: types.UID("pod-" + ns + "/" + name), resource: pods, kind: schema.GroupKind{Kind: "Pod"}, namespace: ns, name: name, owners: owners}
}

func uids(nodes []node) []types.UID {
	var out []types.UID
	for _, n := range nodes {
		out = append(out, n.uid)
	}
	slices.Sort(out)
	return out
}

func sorted(u []types.UID) []types.UID {
	u = slices.Clone(u)
	slices.Sort(u)
	return u
}

func TestGraphIndexesDependentsByOwnerUID(t *testing.T) {
	g := newGraph()
	owner := configMap("a", "owner")
	g.upsert(owner)
	p1 := pod("a", "p1", ownedBy(owner, true))
	p2 := pod("a", "p2", ownedBy(owner, false))
	g.upsert(p1)
	g.upsert(p2)
	if got, want := uids(g.dependentsOf(owner)), sorted([]types.UID{p1.uid, p2.uid}); !slices.Equal(got, want) {
		t.Fatalf("dependents: got %v, want %v", got, want)
	}
	if got := uids(blockingDependents(owner, g.dependentsOf(owner))); !slices.Equal(got, []types.UID{p1.uid}) {
		t.Fatalf("blocking dependents: got %v, want only %s", got, p1.uid)
	}

	// A dependent that drops its reference leaves the index.
	p2.owners = nil
	g.upsert(p2)
	if got := uids(g.dependentsOf(owner)); !slices.Equal(got, []types.UID{p1.uid}) {
		t.Fatalf("after p2 dropped its reference: got %v", got)
	}
}

func TestGraphIgnoresDependentsInOtherNamespaces(t *testing.T) {
	g := newGraph()
	owner := configMap("a", "owner")
	g.upsert(owner)
	g.upsert(pod("b", "elsewhere", ownedBy(owner, true)))
	wrongName := pod("a", "wrong-name", ownedBy(owner, true))
	wrongName.owners[0].Name = "not-the-owner"
	g.upsert(wrongName)
	if deps := g.dependentsOf(owner); len(deps) != 0 {
		t.Fatalf("a namespaced owner has no dependents outside its namespace or under another name, got %v", uids(deps))
	}

	// A cluster-scoped owner may own namespaced dependents (a Node its Lease).
	node := node{uid: "node-uid", resource: nodes, kind: schema.GroupKind{Kind: "Node"}, name: "n1"}
	g.upsert(node)
	lease := pod("kube-node-lease", "n1", ownedBy(node, false))
	g.upsert(lease)
	if got := uids(g.dependentsOf(node)); !slices.Equal(got, []types.UID{lease.uid}) {
		t.Fatalf("node dependents: got %v", got)
	}
}

func TestGraphReportsWhatToLookAtAgain(t *testing.T) {
	g := newGraph()
	owner := configMap("a", "owner")
	other := configMap("a", "other")
	dep := pod("a", "p", ownedBy(owner, true))

	if got := sorted(g.upsert(dep)); !slices.Equal(got, sorted([]types.UID{dep.uid, owner.uid})) {
		t.Fatalf("a new dependent: got %v", got)
	}
	if got := g.upsert(dep); got != nil {
		t.Fatalf("an update that changes nothing the collector uses must queue nothing, got %v", got)
	}
	moved := dep
	moved.owners = []metav1.OwnerReference{ownedBy(other, true)}
	if got := sorted(g.upsert(moved)); !slices.Equal(got, sorted([]types.UID{dep.uid, owner.uid, other.uid})) {
		t.Fatalf("an owner change must queue the dependent and both owners, got %v", got)
	}
	g.upsert(other)
	if got := sorted(g.remove(other.uid)); !slices.Equal(got, []types.UID{dep.uid}) {
		t.Fatalf("removing an owner must queue its dependents, got %v", got)
	}
	if got := sorted(g.remove(dep.uid)); !slices.Equal(got, []types.UID{other.uid}) {
		t.Fatalf("removing a dependent must queue its owners, got %v", got)
	}
	if got := g.remove(dep.uid); got != nil {
		t.Fatalf("removing an unknown object queues nothing, got %v", got)
	}
	if _, ok := g.dependents[other.uid]; ok {
		t.Fatal("the index keeps an empty entry for a removed dependent")
	}
}

func TestDeletingStatesFollowFinalizers(t *testing.T) {
	n := configMap("a", "x")
	n.finalizers = []string{metav1.FinalizerDeleteDependents}
	if n.deletingDependents() {
		t.Fatal("a finalizer alone is not a deletion")
	}
	n.deleting = true
	if !n.deletingDependents() || n.orphaning() {
		t.Fatal("foregroundDeletion on a deleting object means deleting dependents")
	}
	n.finalizers = []string{"example.com/x", metav1.FinalizerOrphanDependents}
	if n.deletingDependents() || !n.orphaning() {
		t.Fatal("orphan on a deleting object means orphaning")
	}
}
