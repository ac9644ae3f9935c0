package scheduler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Weights of kube-scheduler's default profile for its NodeAffinity and
// TaintToleration scores, against 1 for each of score's.
const (
	nodeAffinityWeight    = 2
	taintTolerationWeight = 3
)

// nodePreferences are what a pod prefers of nodes without requiring it:
// its preferred node affinity terms, and the PreferNoSchedule taints it
// would rather avoid.
type nodePreferences struct {
	affinity *nodeaffinity.PreferredSchedulingTerms // nil without preferred terms
	// tolerations are those that can tolerate a PreferNoSchedule taint.
	tolerations []v1.Toleration
}

func newNodePreferences(pod *v1.Pod) (nodePreferences, error) {
	var p nodePreferences
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			return p, fmt.Errorf("pod %s/%s: preferred node affinity: %w", pod.Namespace, pod.Name, err)
		}
		p.affinity = terms
	}
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			p.tolerations = append(p.tolerations, t)
		}
	}
	return p, nil
}

// untoleratedPreferNoSchedule counts node's PreferNoSchedule taints the pod does not tolerate.
func (p nodePreferences) untoleratedPreferNoSchedule(node *v1.Node) int64 {
	var n int64
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != v1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := false
		for j := range p.tolerations {
			if p.tolerations[j].ToleratesTaint(klog.Background(), taint, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			n++
		}
	}
	return n
}

// scores returns the feasible nodes' weighted NodeAffinity and
// TaintToleration scores, each normalized as kube-scheduler does: by the
// highest (affinity: the more matching weight, the better; taints: the
// fewer untolerated, the better);
// nil when they are equal everywhere (no preferred terms, no untolerated
// PreferNoSchedule taint), which changes no node's rank.
func (p nodePreferences) scores(nodes nodeList, feasible []int) []int64 {
	var affinity, taints []int64 // allocated only when they can differ
	if p.affinity != nil {
		affinity = make([]int64, len(feasible))
	}
	for i, at := range feasible {
		node := nodes.Node(at)
		if affinity != nil {
			affinity[i] = p.affinity.Score(node)
		}
		if n := p.untoleratedPreferNoSchedule(node); n > 0 {
			if taints == nil {
				taints = make([]int64, len(feasible))
			}
			taints[i] = n
		}
	}
	if affinity == nil && taints == nil {
		return nil
	}
	out := make([]int64, len(feasible))
	if affinity != nil {
		for i, v := range normalizeByMax(affinity, false) {
			out[i] += nodeAffinityWeight * v
		}
	}
	if taints != nil { // else every node scores the same 100
		for i, v := range normalizeByMax(taints, true) {
			out[i] += taintTolerationWeight * v
		}
	}
	return out
}

// normalizeByMax is kube-scheduler's default score normalization: raw
// scaled so that the highest is 100, or with reverse so that the highest
// is 0 (all 100 when every raw score is 0).
func normalizeByMax(raw []int64, reverse bool) []int64 {
	var hi int64
	for _, v := range raw {
		hi = max(hi, v)
	}
	out := make([]int64, len(raw))
	for i, v := range raw {
		if hi > 0 {
			out[i] = v * 100 / hi
		}
		if reverse {
			out[i] = 100 - out[i]
		}
	}
	return out
}
