package scheduler

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestNodePreferencesScore(t *testing.T) {
	ssd := func(n *v1.Node) { n.Labels = map[string]string{"disk": "ssd"} }
	avoid := func(n *v1.Node) {
		n.Spec.Taints = []v1.Taint{{Key: "spot", Value: "true", Effect: v1.TaintEffectPreferNoSchedule}}
	}
	prefersSSD := func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
			Weight: 50, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}}},
		}}}}
	}
	toleratesSpot := func(p *v1.Pod) {
		p.Spec.Tolerations = []v1.Toleration{{Key: "spot", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule}}
	}
	cases := []struct {
		name  string
		pod   *v1.Pod
		nodes []*v1.Node
		want  string
	}{
		{"preferred node affinity draws the pod", testPod("p", "100m", "64Mi", prefersSSD),
			[]*v1.Node{testNode("a", "2", "4Gi"), testNode("b", "2", "4Gi", ssd)}, "b"},
		{"without the preference the name breaks the tie", testPod("p", "100m", "64Mi"),
			[]*v1.Node{testNode("a", "2", "4Gi"), testNode("b", "2", "4Gi", ssd)}, "a"},
		{"a PreferNoSchedule taint pushes the pod away, never filters", testPod("p", "100m", "64Mi"),
			[]*v1.Node{testNode("a", "2", "4Gi", avoid), testNode("b", "2", "4Gi")}, "b"},
		{"a tolerated PreferNoSchedule taint is no reason", testPod("p", "100m", "64Mi", toleratesSpot),
			[]*v1.Node{testNode("a", "2", "4Gi", avoid), testNode("b", "2", "4Gi")}, "a"},
		{"only a tainted node is left", testPod("p", "100m", "64Mi"),
			[]*v1.Node{testNode("a", "2", "4Gi", avoid)}, "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := decide(t, tc.pod, tc.nodes, nil, nil); d.node != tc.want {
				t.Fatalf("scheduled to %q (%s), want %q", d.node, d.message(), tc.want)
			}
		})
	}
}

func TestNormalizeByMaxAsUpstream(t *testing.T) {
	if got := normalizeByMax([]int64{0, 25, 50}, false); !slices.Equal(got, []int64{0, 50, 100}) {
		t.Errorf("normalize: %v", got)
	}
	if got := normalizeByMax([]int64{0, 1, 2}, true); !slices.Equal(got, []int64{100, 50, 0}) {
		t.Errorf("reverse: %v", got)
	}
	if got := normalizeByMax([]int64{0, 0}, true); !slices.Equal(got, []int64{100, 100}) {
		t.Errorf("reverse of zeros: %v", got)
	}
}
