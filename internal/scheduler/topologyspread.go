package scheduler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/berth/berth/internal/fit"
)

// Reasons as kube-scheduler's PodTopologySpread filter words them.
const (
	reasonSpreadSkew         = "node(s) didn't match pod topology spread constraints"
	reasonSpreadMissingLabel = "node(s) didn't match pod topology spread constraints (missing required label)"
)

// spreadConstraint is one of a pod's topologySpreadConstraints, with the
// matching pods counted per domain (value of its topology key) over the
// nodes its inclusion policies admit.
type spreadConstraint struct {
	key        string
	maxSkew    int
	minDomains int
	hard       bool // whenUnsatisfiable: DoNotSchedule
	selector   labels.Selector
	counts     map[string]int // by domain; every admitted domain is present
	// self is 1 when the pod being scheduled matches its own selector: it
	// counts in whichever domain it lands.
	self int
}

// minCount is the fewest matching pods in any domain; 0 while there are
// fewer domains than minDomains, as upstream.
func (c *spreadConstraint) minCount() int {
	if len(c.counts) < c.minDomains {
		return 0
	}
	least := -1
	for _, n := range c.counts {
		if least < 0 || n < least {
			least = n
		}
	}
	return max(least, 0)
}

// spreadCheck is kube-scheduler's PodTopologySpread filter and score for
// one pod in one cycle.
type spreadCheck struct {
	constraints []spreadConstraint
	soft        bool // some constraint is ScheduleAnyway
}

// newSpreadCheck counts, for each of pod's constraints, the pods its
// selector matches (in pod's namespace, not terminating) per domain of
// the nodes its policies admit. nil when pod has no constraints.
func newSpreadCheck(pod *v1.Pod, nodes nodeList, placed func(yield func(placedPod) bool)) (*spreadCheck, error) {
	if len(pod.Spec.TopologySpreadConstraints) == 0 {
		return nil, nil
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	check := &spreadCheck{}
	for i := range pod.Spec.TopologySpreadConstraints {
		t := &pod.Spec.TopologySpreadConstraints[i]
		selector, err := ownerSelector(pod, t.LabelSelector, t.MatchLabelKeys, nil)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: topologySpreadConstraints[%d]: %w", pod.Namespace, pod.Name, i, err)
		}
		c := spreadConstraint{key: t.TopologyKey, maxSkew: int(t.MaxSkew), hard: t.WhenUnsatisfiable == v1.DoNotSchedule,
			selector: selector, counts: map[string]int{}}
		if t.MinDomains != nil {
			c.minDomains = int(*t.MinDomains)
		}
		if selector.Matches(labels.Set(pod.Labels)) {
			c.self = 1
		}
		// Each node is judged once; placed pods count where their node was admitted.
		admitted := sets.New[string]()
		for j := range nodes.Len() {
			node := nodes.Node(j)
			if value, ok := node.Labels[c.key]; ok && spreadAdmits(pod, affinity, t, node) {
				admitted.Insert(node.Name)
				c.counts[value] += 0 // the domain exists, even empty
			}
		}
		for p := range placed {
			if p.node == nil || p.pod.Namespace != pod.Namespace || p.pod.DeletionTimestamp != nil ||
				!c.selector.Matches(labels.Set(p.pod.Labels)) || !admitted.Has(p.node.Name) {
				continue
			}
			c.counts[p.node.Labels[c.key]]++
		}
		check.soft = check.soft || !c.hard
		check.constraints = append(check.constraints, c)
	}
	return check, nil
}

// spreadAdmits applies the constraint's node inclusion policies: by
// default a node counts only if it matches the pod's node selector and
// required node affinity (nodeAffinityPolicy Honor), whatever its taints
// (nodeTaintsPolicy Ignore).
func spreadAdmits(pod *v1.Pod, affinity nodeaffinity.RequiredNodeAffinity, t *v1.TopologySpreadConstraint, node *v1.Node) bool {
	if t.NodeAffinityPolicy == nil || *t.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor {
		if match, err := affinity.Match(node); err != nil || !match {
			return false
		}
	}
	if t.NodeTaintsPolicy != nil && *t.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
		if _, untolerated := fit.UntoleratedTaint(pod, node); untolerated {
			return false
		}
	}
	return true
}

// reason says why the pod cannot go to node under its DoNotSchedule
// constraints ("" when it can): placing it there must not make its domain
// exceed the least populated one by more than maxSkew.
func (s *spreadCheck) reason(node *v1.Node) string {
	if s == nil {
		return ""
	}
	for i := range s.constraints {
		c := &s.constraints[i]
		if !c.hard {
			continue
		}
		value, ok := node.Labels[c.key]
		if !ok {
			return reasonSpreadMissingLabel
		}
		if c.counts[value]+c.self-c.minCount() > c.maxSkew {
			return reasonSpreadSkew
		}
	}
	return ""
}

// scores scores the feasible nodes 0..100 under the ScheduleAnyway
// constraints: the fewer matching pods in a node's domains, the higher,
// scaled between the most and least crowded; nil when none is soft.
// (kube-scheduler also weighs each constraint by its number of domains;
// with one constraint, or constraints of similar breadth, the order is
// the same.)
func (s *spreadCheck) scores(nodes nodeList, feasible []int) []int64 {
	if s == nil || !s.soft {
		return nil
	}
	raw := make([]int64, len(feasible))
	for i, at := range feasible {
		node := nodes.Node(at)
		for j := range s.constraints {
			c := &s.constraints[j]
			if c.hard {
				continue
			}
			if value, ok := node.Labels[c.key]; ok {
				raw[i] += int64(c.counts[value])
			}
		}
	}
	return scaleTo100(raw, true)
}
