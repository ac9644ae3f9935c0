package fit

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A pod placed by name is admitted or refused as the kubelet's admission
// refuses it, with the kubelet's reason and message, first failure first.
func TestAdmitBoundAsTheKubelet(t *testing.T) {
	used := Usage{}.Add(pod("1500m", "1Gi", withHostPort(21017, "")))
	linux := func(n *v1.Node) { n.Labels = map[string]string{v1.LabelOSStable: "linux"} }
	taint := func(effect v1.TaintEffect) func(*v1.Node) {
		return func(n *v1.Node) { n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "x", Effect: effect}} }
	}
	cases := []struct {
		name        string
		pod         *v1.Pod
		node        *v1.Node
		reason, msg string // "" = admitted
	}{
		{"fits", pod("500m", "1Gi"), node("2", "4Gi", 10), "", ""},
		{"cpu", pod("1", "1Gi"), node("2", "4Gi", 10), "OutOfcpu",
			"Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000"},
		{"pods come first", pod("1", "1Gi"), node("2", "4Gi", 1), "OutOfpods",
			"Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"},
		{"memory", pod("100m", "4Gi"), node("2", "4Gi", 10), "OutOfmemory",
			"Node didn't have enough resource: memory, requested: 4294967296, used: 1073741824, capacity: 4294967296"},
		{"host port", pod("", "", withHostPort(21017, "")), node("2", "4Gi", 10), "NodePorts",
			"Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{"selector", pod("", "", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }), node("2", "4Gi", 10), "NodeAffinity",
			"Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{"NoSchedule taint admits a pod placed by name", pod("", ""), node("2", "4Gi", 10, taint(v1.TaintEffectNoSchedule)), "", ""},
		{"NoExecute taint", pod("", ""), node("2", "4Gi", 10, taint(v1.TaintEffectNoExecute)), "TaintToleration",
			"Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{"spec.os of another OS, before resources", pod("4", "1Gi", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }),
			node("2", "4Gi", 10, linux), "PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"},
		{"kubernetes.io/os label of another OS, before spec.os", pod("", "", func(p *v1.Pod) {
			p.Labels = map[string]string{v1.LabelOSStable: "windows"}
			p.Spec.OS = &v1.PodOS{Name: v1.Windows}
		}), node("2", "4Gi", 10, linux), "PodOSSelectorNodeLabelDoesNotMatch",
			"Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{"spec.os and label of the node's OS", pod("", "", func(p *v1.Pod) {
			p.Labels = map[string]string{v1.LabelOSStable: "linux"}
			p.Spec.OS = &v1.PodOS{Name: v1.Linux}
		}), node("2", "4Gi", 10, linux), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := AdmitBound(tc.pod, tc.node, used)
			switch {
			case tc.reason == "" && got != nil:
				t.Fatalf("refused %+v, want admitted", *got)
			case tc.reason == "":
			case got == nil:
				t.Fatalf("admitted, want %s", tc.reason)
			case got.Reason != tc.reason || got.Message != tc.msg:
				t.Fatalf("got %q %q, want %q %q", got.Reason, got.Message, tc.reason, tc.msg)
			}
		})
	}
}
