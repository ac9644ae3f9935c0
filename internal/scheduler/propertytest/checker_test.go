package propertytest

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func smallNode(name string, mutate ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a"}}, Status: v1.NodeStatus{
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("3")},
	}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func boundPod(name, node, cpu, mem string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{
		Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}},
	}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func hostPort(port int32, ip string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: 80, HostPort: port, HostIP: ip})
	}
}

func added(rev int64, p *v1.Pod) Event   { return Event{Type: "ADDED", Revision: rev, Pod: p} }
func deleted(rev int64, p *v1.Pod) Event { return Event{Type: "DELETED", Revision: rev, Pod: p} }

// Each case is a history that a broken bind check would let a node see; the
// checker must name the revision and the constraint. The valid case shows it
// does not cry wolf, including when a deletion makes room.
func TestReplayCatchesEveryKindOfViolation(t *testing.T) {
	tainted := func(n *v1.Node) {
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
	}
	a, b, c := boundPod("a", "n", "600m", "100Mi"), boundPod("b", "n", "300m", "100Mi"), boundPod("c", "n", "300m", "100Mi")
	cases := []struct {
		name    string
		node    *v1.Node
		history []Event
		wantRev int64
		want    string
	}{
		{"valid: deletion makes room", smallNode("n"), []Event{added(5, a), added(6, b), deleted(7, a), added(9, c)}, 0, ""},
		{"cpu overcommitted", smallNode("n"), []Event{added(5, a), added(6, b), added(8, c)}, 8, "cpu requests 1200m exceed allocatable 1000m"},
		{"memory overcommitted", smallNode("n"), []Event{added(5, boundPod("m1", "n", "0", "600Mi")), added(6, boundPod("m2", "n", "0", "600Mi"))}, 6, "memory requests"},
		{"too many pods", smallNode("n"), []Event{
			added(1, boundPod("p1", "n", "0", "0")), added(2, boundPod("p2", "n", "0", "0")), added(3, boundPod("p3", "n", "0", "0")), added(4, boundPod("p4", "n", "0", "0")),
		}, 4, "4 pods exceed the node's 3"},
		{"host port clash with a wildcard address", smallNode("n"), []Event{
			added(3, boundPod("h1", "n", "0", "0", hostPort(8080, "127.0.0.1"))), added(4, boundPod("h2", "n", "0", "0", hostPort(8080, ""))),
		}, 4, "pods h1 and h2 claim the same host port"},
		{"untolerated taint", smallNode("n", tainted), []Event{added(2, boundPod("t", "n", "0", "0"))}, 2, "untolerated taint {dedicated: gpu}"},
		{"node selector not matched", smallNode("n"), []Event{added(2, boundPod("s", "n", "0", "0", func(p *v1.Pod) {
			p.Spec.NodeSelector = map[string]string{"zone": "b"}
		}))}, 2, "didn't match Pod's node affinity/selector"},
		{"pod of another node in this node's watch", smallNode("n"), []Event{added(2, boundPod("x", "other", "0", "0"))}, 2, `bound to "other"`},
		{"revisions out of order", smallNode("n"), []Event{added(5, a), added(5, b)}, 5, "not after the previous event's 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Replay(tc.node, tc.history)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("valid history reported: %v", got)
				}
				return
			}
			if len(got) == 0 {
				t.Fatalf("violation not caught; want %q at revision %d", tc.want, tc.wantRev)
			}
			if got[0].Revision != tc.wantRev || !strings.Contains(got[0].Problem, tc.want) {
				t.Errorf("first violation %v; want %q at revision %d", got[0], tc.want, tc.wantRev)
			}
		})
	}
}

// A finished pod releases its share: the node may take another in its place.
func TestReplayReleasesFinishedPods(t *testing.T) {
	a, b := boundPod("a", "n", "700m", "0"), boundPod("b", "n", "700m", "0")
	done := a.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	if got := Replay(smallNode("n"), []Event{added(1, a), {Type: "MODIFIED", Revision: 2, Pod: done}, added(3, b)}); len(got) != 0 {
		t.Errorf("violations after a pod finished: %v", got)
	}
}

func TestUnschedulableMessageAggregatesPerNodeReasons(t *testing.T) {
	tainted := smallNode("t", func(n *v1.Node) {
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
	})
	full, ported, zoneB := smallNode("full"), smallNode("ported"), smallNode("zb", func(n *v1.Node) { n.Labels["zone"] = "b" })
	bound := map[string][]*v1.Pod{
		"full":   {boundPod("big", "full", "900m", "0")},
		"ported": {boundPod("web", "ported", "0", "0", hostPort(80, ""))},
	}
	pod := boundPod("p", "", "200m", "0", hostPort(80, "127.0.0.1"), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} })
	msg, fits := UnschedulableMessage(pod, []*v1.Node{tainted, full, ported, zoneB}, bound)
	want := "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't have free ports for the requested pod ports, " +
		"1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}."
	if fits || msg != want {
		t.Errorf("got fits=%v\n%q\nwant\n%q", fits, msg, want)
	}
	if _, fits := UnschedulableMessage(boundPod("small", "", "100m", "0"), []*v1.Node{full}, bound); !fits {
		t.Error("a pod that fits was reported unschedulable")
	}
}
