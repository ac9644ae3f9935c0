package scheduler

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func spreading(key string, maxSkew int32, when v1.UnsatisfiableConstraintAction, sel map[string]string, mutate ...func(*v1.TopologySpreadConstraint)) func(*v1.Pod) {
	return func(p *v1.Pod) {
		c := v1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}
		for _, m := range mutate {
			m(&c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

func TestTopologySpreadFiltersAndScores(t *testing.T) {
	web := map[string]string{"app": "web"}
	hosts := []*v1.Node{zonedNode("a", "z1"), zonedNode("b", "z1"), zonedNode("c", "z2")}
	hard := func(key string, mutate ...func(*v1.TopologySpreadConstraint)) func(*v1.Pod) {
		return spreading(key, 1, v1.DoNotSchedule, web, mutate...)
	}
	inZ1 := func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{zoneKey: "z1"} }
	terminating := func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }
	runPlacementCases(t, nil, []placementCase{
		{name: "the pod goes to the emptier zone",
			pod:    labelled("p", "default", web, hard(zoneKey)),
			nodes:  hosts,
			placed: []*v1.Pod{on("a", labelled("w1", "default", web))},
			want:   "c"},
		{name: "balanced zones: resources decide",
			pod:    labelled("p", "default", web, hard(zoneKey)),
			nodes:  hosts,
			placed: []*v1.Pod{on("a", labelled("w1", "default", web)), on("c", labelled("w2", "default", web))},
			want:   "b"},
		{name: "fewer domains than minDomains: the minimum counts as 0",
			pod: labelled("p", "default", web, hard(zoneKey, func(c *v1.TopologySpreadConstraint) {
				c.MinDomains = new(int32(3))
			})),
			nodes:   hosts,
			placed:  []*v1.Pod{on("a", labelled("w1", "default", web)), on("c", labelled("w2", "default", web))},
			message: "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints."},
		{name: "a node without the topology key",
			pod:     labelled("p", "default", web, hard(zoneKey)),
			nodes:   []*v1.Node{zonedNode("x", "")},
			message: "0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints (missing required label)."},
		{name: "domains outside the pod's node selector do not count (nodeAffinityPolicy Honor)",
			pod:    labelled("p", "default", web, hard(zoneKey), inZ1),
			nodes:  hosts,
			placed: []*v1.Pod{on("a", labelled("w1", "default", web))},
			want:   "b"},
		{name: "with nodeAffinityPolicy Ignore they do",
			pod: labelled("p", "default", web, hard(zoneKey, func(c *v1.TopologySpreadConstraint) {
				c.NodeAffinityPolicy = new(v1.NodeInclusionPolicyIgnore)
			}), inZ1),
			nodes:   hosts,
			placed:  []*v1.Pod{on("a", labelled("w1", "default", web))},
			message: "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't match pod topology spread constraints."},
		{name: "pods of other namespaces, other labels and terminating pods do not count",
			pod:   labelled("p", "default", web, hard(hostnameKey)),
			nodes: hosts[:2],
			placed: []*v1.Pod{on("a", labelled("w1", "prod", web)), on("a", labelled("d1", "default", map[string]string{"app": "db"})),
				on("a", labelled("w2", "default", web, terminating)), on("b", labelled("w3", "default", web))},
			want: "a"},
		{name: "matchLabelKeys counts only the pod's own revision",
			pod: labelled("p", "default", map[string]string{"app": "web", "rev": "2"}, hard(hostnameKey, func(c *v1.TopologySpreadConstraint) {
				c.MatchLabelKeys = []string{"rev"}
			})),
			nodes:  hosts[:2],
			placed: []*v1.Pod{on("a", labelled("old", "default", map[string]string{"app": "web", "rev": "1"})), on("b", labelled("new", "default", map[string]string{"app": "web", "rev": "2"}))},
			want:   "a"},
		{name: "ScheduleAnyway prefers the emptier zone without filtering",
			pod:    labelled("p", "default", web, spreading(zoneKey, 1, v1.ScheduleAnyway, web)),
			nodes:  hosts,
			placed: []*v1.Pod{on("a", labelled("w1", "default", web)), on("b", labelled("w2", "default", web))},
			want:   "c"},
	})
}
