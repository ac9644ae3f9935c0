package garbagecollector

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// node is what the collector knows of one object: where it lives, whom it
// names as owners, and whether it is being deleted and how.
type node struct {
	uid       types.UID
	resource  schema.GroupVersionResource
	kind      schema.GroupKind
	namespace string
	name      string
	owners    []metav1.OwnerReference
	// deleting is set once the object has a deletionTimestamp.
	deleting   bool
	finalizers []string
}

// deletingDependents says the object waits, in foreground deletion, for
// its dependents to go first.
func (n node) deletingDependents() bool {
	return n.deleting && slices.Contains(n.finalizers, metav1.FinalizerDeleteDependents)
}

// orphaning says the object waits for its dependents to be released.
func (n node) orphaning() bool {
	return n.deleting && slices.Contains(n.finalizers, metav1.FinalizerOrphanDependents)
}

// ownerRef returns the dependent's reference to owner, if it has one.
func (n node) ownerRef(owner types.UID) (metav1.OwnerReference, bool) {
	i := slices.IndexFunc(n.owners, func(r metav1.OwnerReference) bool { return r.UID == owner })
	if i < 0 {
		return metav1.OwnerReference{}, false
	}
	return n.owners[i], true
}

// matches says whether ref, written by a dependent in namespace
// dependentNS, names this very object. A namespaced owner must share the
// dependent's namespace; a reference from elsewhere does not count, as
// upstream.
func (n node) matches(ref metav1.OwnerReference, dependentNS string) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	return n.uid == ref.UID && n.name == ref.Name && n.kind == (schema.GroupKind{Group: gv.Group, Kind: ref.Kind}) &&
		(n.namespace == "" || n.namespace == dependentNS)
}

// graph holds every watched object by UID, and, per owner UID, the UIDs of
// the objects that name it as owner (whether or not the owner is known).
// It is safe for concurrent use; informer handlers write, workers read.
type graph struct {
	mu         sync.RWMutex
	nodes      map[types.UID]node
	dependents map[types.UID]map[types.UID]struct{}
}

func newGraph() *graph {
	return &graph{nodes: map[types.UID]node{}, dependents: map[types.UID]map[types.UID]struct{}{}}
}

// upsert records n and returns the UIDs whose state may have changed
// because of it: n itself, and n's old and new owners.
func (g *graph) upsert(n node) []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, existed := g.nodes[n.uid]
	if existed {
		g.unindex(old)
	}
	g.nodes[n.uid] = n
	defer g.index(n)
	if existed && sameForCollection(old, n) {
		return nil // e.g. a status update: nothing the collector acts on changed
	}
	affected := []types.UID{n.uid}
	affected = appendOwners(affected, old.owners)
	return appendOwners(affected, n.owners)
}

// remove forgets uid and returns the UIDs to look at again: its dependents
// (their owner may now be gone) and its owners (a foreground deletion may
// now be free to finish).
func (g *graph) remove(uid types.UID) []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.removeLocked(uid)
}

// removeResource forgets every object of resource, as remove does each.
func (g *graph) removeResource(resource schema.GroupVersionResource) []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	var affected []types.UID
	for uid, n := range g.nodes {
		if n.resource == resource {
			affected = append(affected, g.removeLocked(uid)...)
		}
	}
	return affected
}

func (g *graph) removeLocked(uid types.UID) []types.UID {
	old, existed := g.nodes[uid]
	if !existed {
		return nil
	}
	g.unindex(old)
	delete(g.nodes, uid)
	var affected []types.UID
	for dep := range g.dependents[uid] {
		affected = append(affected, dep)
	}
	return appendOwners(affected, old.owners)
}

// sameForCollection says two states of one object look alike to the
// collector.
func sameForCollection(a, b node) bool {
	return a.deleting == b.deleting && slices.Equal(a.finalizers, b.finalizers) &&
		slices.EqualFunc(a.owners, b.owners, func(x, y metav1.OwnerReference) bool {
			return x.UID == y.UID && x.Name == y.Name && x.Kind == y.Kind && x.APIVersion == y.APIVersion &&
				ptrEqual(x.BlockOwnerDeletion, y.BlockOwnerDeletion)
		})
}

func ptrEqual(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func (g *graph) index(n node) {
	for _, ref := range n.owners {
		set := g.dependents[ref.UID]
		if set == nil {
			set = map[types.UID]struct{}{}
			g.dependents[ref.UID] = set
		}
		set[n.uid] = struct{}{}
	}
}

func (g *graph) unindex(n node) {
	for _, ref := range n.owners {
		set := g.dependents[ref.UID]
		delete(set, n.uid)
		if len(set) == 0 {
			delete(g.dependents, ref.UID)
		}
	}
}

func appendOwners(uids []types.UID, refs []metav1.OwnerReference) []types.UID {
	for _, ref := range refs {
		if !slices.Contains(uids, ref.UID) {
			uids = append(uids, ref.UID)
		}
	}
	return uids
}

func (g *graph) get(uid types.UID) (node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	return n, ok
}

// dependentsOf returns the known objects whose owner references name owner
// validly (same namespace for a namespaced owner; a cluster-scoped
// dependent cannot be owned by a namespaced object).
func (g *graph) dependentsOf(owner node) []node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []node
	for uid := range g.dependents[owner.uid] {
		dep, ok := g.nodes[uid]
		if !ok {
			continue
		}
		ref, _ := dep.ownerRef(owner.uid)
		if owner.matches(ref, dep.namespace) {
			out = append(out, dep)
		}
	}
	return out
}

// blockingDependents are the dependents that hold a foreground deletion of
// owner: those whose reference to it sets blockOwnerDeletion.
func blockingDependents(owner node, deps []node) []node {
	var out []node
	for _, dep := range deps {
		if ref, _ := dep.ownerRef(owner.uid); ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			out = append(out, dep)
		}
	}
	return out
}
