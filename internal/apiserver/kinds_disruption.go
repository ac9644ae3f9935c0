package apiserver

import (
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	// The policy group's internal types, defaults and conversions in the
	// legacy scheme, which its registry strategy uses.
	policyapi "k8s.io/kubernetes/pkg/apis/policy"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
)

// disruptionResources is policy/v1: PodDisruptionBudgets, prepared and
// validated by upstream's registry strategy. Upstream's disruption
// controller fills their status; pods/eviction (pod_eviction.go) spends
// the disruptions it allows.
func disruptionResources() []*resource {
	return []*resource{
		{
			gvr: policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), kind: "PodDisruptionBudget", singular: "poddisruptionbudget",
			shortNames: []string{"pdb"}, namespaced: true,
			newObj: newOf[policyv1.PodDisruptionBudget](), newList: newOf[policyv1.PodDisruptionBudgetList](),
			registry: &registryKind{strategy: poddisruptionbudget.Strategy, newInternal: func() runtime.Object { return &policyapi.PodDisruptionBudget{} },
				subresources: map[string]upstreamStrategy{"status": poddisruptionbudget.StatusStrategy}},
			subresources: []string{"status"},
		},
	}
}
