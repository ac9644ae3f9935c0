package garbagecollector

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestDecide(t *testing.T) {
	a, b := configMap("ns", "a"), configMap("ns", "b")
	dep := pod("ns", "p", ownedBy(a, true), ownedBy(b, true))
	cases := []struct {
		name          string
		a, b          ownerState
		hasDependents bool
		want          verdict
	}{
		{"both live", ownerSolid, ownerSolid, false, verdict{}},
		{"one gone", ownerSolid, ownerDangling, false, verdict{remove: []types.UID{b.uid}}},
		{"one waiting", ownerWaiting, ownerSolid, false, verdict{remove: []types.UID{a.uid}}},
		{"both gone", ownerDangling, ownerDangling, false, verdict{delete: true, policy: metav1.DeletePropagationBackground}},
		{"gone and waiting", ownerDangling, ownerWaiting, false, verdict{delete: true, policy: metav1.DeletePropagationBackground}},
		{"waiting with own dependents", ownerWaiting, ownerDangling, true, verdict{delete: true, policy: metav1.DeletePropagationForeground}},
		{"unresolvable keeps it", ownerInvalid, ownerDangling, false, verdict{remove: []types.UID{b.uid}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decide(dep, map[types.UID]ownerState{a.uid: tc.a, b.uid: tc.b}, tc.hasDependents)
			if got.delete != tc.want.delete || got.policy != tc.want.policy || !slices.Equal(got.remove, tc.want.remove) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecideKeepsTheDependentsOwnPolicy(t *testing.T) {
	a := configMap("ns", "a")
	dep := pod("ns", "p", ownedBy(a, true))
	dep.finalizers = []string{metav1.FinalizerOrphanDependents}
	got := decide(dep, map[types.UID]ownerState{a.uid: ownerDangling}, true)
	if !got.delete || got.policy != metav1.DeletePropagationOrphan {
		t.Fatalf("a dependent that asks to orphan its own dependents: got %+v", got)
	}
}
