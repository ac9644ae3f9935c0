package garbagecollector

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ownerState is what one owner reference of a dependent resolves to.
type ownerState int

const (
	// ownerSolid: the owner exists and is not waiting for its dependents.
	ownerSolid ownerState = iota
	// ownerDangling: no object with that name and UID exists where the
	// dependent may point (absent, recreated, or in another namespace).
	ownerDangling
	// ownerWaiting: the owner is in foreground deletion, waiting for its
	// dependents to go.
	ownerWaiting
	// ownerInvalid: the reference can never resolve (a cluster-scoped
	// dependent naming a namespaced kind). As upstream, it keeps the
	// dependent: the collector will not delete on a reference it cannot check.
	ownerInvalid
)

// verdict is what to do with a dependent once its owners are resolved.
type verdict struct {
	// remove lists owner UIDs to drop from the dependent's references.
	remove []types.UID
	// delete says to delete the dependent with policy.
	delete bool
	policy metav1.DeletionPropagation
	// waiting says some owner waits for the dependent in foreground deletion.
	waiting bool
}

// decide applies upstream's rules to a dependent whose every owner
// reference has been resolved: with a live owner left, only the references
// to gone or foreground-deleting owners are dropped; with none left, the
// dependent is deleted — in foreground when an owner waits for it and it has
// dependents of its own (so they go first), else in the background.
func decide(dep node, states map[types.UID]ownerState, hasDependents bool) verdict {
	var dangling, waiting []types.UID
	live := false
	for _, ref := range dep.owners {
		switch states[ref.UID] {
		case ownerSolid, ownerInvalid:
			live = true
		case ownerDangling:
			dangling = append(dangling, ref.UID)
		case ownerWaiting:
			waiting = append(waiting, ref.UID)
		}
	}
	switch {
	case live:
		return verdict{remove: append(dangling, waiting...)}
	case len(waiting) > 0 && hasDependents:
		return verdict{delete: true, policy: metav1.DeletePropagationForeground, waiting: true}
	case len(waiting) > 0 || len(dangling) > 0:
		return verdict{delete: true, policy: policyOf(dep), waiting: len(waiting) > 0}
	}
	return verdict{}
}

// policyOf keeps a propagation the dependent's finalizers already ask for;
// otherwise background, as upstream.
func policyOf(dep node) metav1.DeletionPropagation {
	switch {
	case slices.Contains(dep.finalizers, metav1.FinalizerOrphanDependents):
		return metav1.DeletePropagationOrphan
	case slices.Contains(dep.finalizers, metav1.FinalizerDeleteDependents):
		return metav1.DeletePropagationForeground
	}
	return metav1.DeletePropagationBackground
}
