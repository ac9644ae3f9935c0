package apiserver

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Deletion propagation, as upstream's generic registry does it: the API
// server only records the caller's choice as a finalizer on the owner; the
// garbage collector (internal/controller/garbagecollector) acts on it.
// Background propagation, the default for every resource berth serves,
// needs no finalizer: the owner goes at once and the collector deletes its
// dependents afterwards.

// gcFinalizers are the two finalizers the garbage collector owns.
var gcFinalizers = []string{metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents}

// gcPolicy is the kind's default garbage-collection policy, as upstream's
// store asks its delete strategy.
func gcPolicy(ctx context.Context, strategy any) rest.GarbageCollectionPolicy {
	if gc, ok := strategy.(rest.GarbageCollectionDeleteStrategy); ok {
		return gc.DefaultGarbageCollectionPolicy(ctx)
	}
	return rest.DeleteDependents
}

// defaultPropagation is the propagation a kind's policy gives a delete
// request that names none: orphan, or "" (background).
func defaultPropagation(policy rest.GarbageCollectionPolicy) metav1.DeletionPropagation {
	if policy == rest.OrphanDependents {
		return metav1.DeletePropagationOrphan
	}
	return ""
}

// propagationFromOptions returns the policy the caller asked for, or ""
// when the options are silent. The legacy orphanDependents field wins; the
// handlers have already rejected requests that set both.
func propagationFromOptions(options *metav1.DeleteOptions) metav1.DeletionPropagation {
	//lint:ignore SA1019 the legacy field is still part of the API and must be honoured
	if orphan := options.OrphanDependents; orphan != nil {
		if *orphan {
			return metav1.DeletePropagationOrphan
		}
		// orphanDependents=false asks only not to orphan: background.
		return metav1.DeletePropagationBackground
	}
	if options.PropagationPolicy != nil {
		return *options.PropagationPolicy
	}
	return ""
}

// propagationFromFinalizers returns the policy an earlier delete request
// recorded on the object, or "" when there is none.
func propagationFromFinalizers(finalizers []string) metav1.DeletionPropagation {
	for _, f := range finalizers {
		switch f {
		case metav1.FinalizerOrphanDependents:
			return metav1.DeletePropagationOrphan
		case metav1.FinalizerDeleteDependents:
			return metav1.DeletePropagationForeground
		}
	}
	return ""
}

// applyPropagationFinalizers sets the object's garbage-collection finalizer
// to match the effective policy (the request's, else the one already
// recorded, else the kind's default, "" for background) and reports
// whether the finalizers changed.
func applyPropagationFinalizers(accessor metav1.Object, options *metav1.DeleteOptions, kindDefault metav1.DeletionPropagation) bool {
	policy := propagationFromOptions(options)
	if policy == "" {
		policy = propagationFromFinalizers(accessor.GetFinalizers())
	}
	if policy == "" {
		policy = kindDefault
	}
	old := accessor.GetFinalizers()
	updated := slices.DeleteFunc(slices.Clone(old), func(f string) bool { return slices.Contains(gcFinalizers, f) })
	switch policy {
	case metav1.DeletePropagationOrphan:
		updated = append(updated, metav1.FinalizerOrphanDependents)
	case metav1.DeletePropagationForeground:
		updated = append(updated, metav1.FinalizerDeleteDependents)
	}
	if sameSet(old, updated) {
		return false
	}
	accessor.SetFinalizers(updated)
	return true
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

// markDeletingForFinalizers marks an object that finalizers hold (and that
// is not deleted gracefully) as deleting now, with grace 0, as upstream:
// an earlier deletionTimestamp is kept, and the first mark bumps a set
// generation so controllers notice. It reports whether anything changed.
func markDeletingForFinalizers(accessor metav1.Object, now time.Time) bool {
	changed := false
	existing := accessor.GetDeletionTimestamp()
	if existing == nil && accessor.GetGeneration() > 0 {
		accessor.SetGeneration(accessor.GetGeneration() + 1)
	}
	if existing == nil || existing.After(now) {
		ts := metav1.NewTime(now)
		accessor.SetDeletionTimestamp(&ts)
		changed = true
	}
	if grace := accessor.GetDeletionGracePeriodSeconds(); grace == nil || *grace != 0 {
		accessor.SetDeletionGracePeriodSeconds(new(int64))
		changed = true
	}
	return changed
}
