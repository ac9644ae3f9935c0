package scheduler

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth/berth/internal/fit"
)

func testNode(name, cpu, mem string, mutate ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem), v1.ResourcePods: resource.MustParse("110")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func testPod(name, cpu, mem string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{SchedulerName: DefaultName, Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func view(n *v1.Node, group int, bound ...*v1.Pod) nodeView {
	u := fit.Usage{}
	for _, p := range bound {
		u = u.Add(p)
	}
	return nodeView{node: fit.NewNode(n), usage: u, group: group}
}

func notReady(n *v1.Node) { n.Status.Conditions[0].Status = v1.ConditionFalse }
func cordoned(n *v1.Node) { n.Spec.Unschedulable = true }

func TestScheduleFiltersAndScores(t *testing.T) {
	busy := testPod("busy", "1500m", "1Gi")
	cases := []struct {
		name  string
		pod   *v1.Pod
		nodes nodeViews
		want  string
	}{
		{"least allocated wins", testPod("p", "100m", "128Mi"),
			nodeViews{view(testNode("a", "2", "4Gi"), 0, busy), view(testNode("b", "2", "4Gi"), 0)}, "b"},
		{"spread pods of one group", testPod("p", "100m", "128Mi"),
			nodeViews{view(testNode("a", "2", "4Gi"), 3), view(testNode("b", "2", "4Gi"), 1)}, "b"},
		{"balanced allocation breaks an even least-allocated tie", testPod("p", "1", "1Gi"),
			// Both end half allocated on average; a at cpu 1/2 mem 1/2, b at cpu 1/4 mem 3/4.
			nodeViews{view(testNode("a", "2", "2Gi"), 0), view(testNode("b", "4", "4Gi"), 0, testPod("x", "0", "2Gi"))}, "a"},
		{"not-ready node filtered", testPod("p", "100m", "128Mi"),
			nodeViews{view(testNode("a", "8", "8Gi", notReady), 0), view(testNode("b", "1", "1Gi"), 0)}, "b"},
		{"cordoned node filtered", testPod("p", "100m", "128Mi"),
			nodeViews{view(testNode("a", "8", "8Gi", cordoned), 0), view(testNode("b", "1", "1Gi"), 0)}, "b"},
		{"insufficient everywhere", testPod("p", "4", "128Mi"),
			nodeViews{view(testNode("a", "2", "4Gi"), 0), view(testNode("b", "2", "4Gi"), 0)}, ""},
		{"equal scores pick the smallest name", testPod("p", "100m", "128Mi"),
			nodeViews{view(testNode("z", "2", "4Gi"), 0), view(testNode("m", "2", "4Gi"), 0)}, "m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := schedule(tc.pod, tc.nodes, podChecks{}, 0).node; got != tc.want {
				t.Errorf("scheduled to %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUnschedulableMessageAggregatesReasons(t *testing.T) {
	taint := func(n *v1.Node) {
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
	}
	d := schedule(testPod("p", "3", "128Mi"), nodeViews{
		view(testNode("a", "2", "4Gi"), 0),
		view(testNode("b", "2", "4Gi"), 0),
		view(testNode("c", "8", "8Gi", taint), 0),
		view(testNode("d", "8", "8Gi", notReady), 0),
	}, podChecks{}, 0)
	want := "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, " +
		"1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 Insufficient cpu."
	if d.node != "" || d.message() != want {
		t.Errorf("got node %q, message\n%q\nwant\n%q", d.node, d.message(), want)
	}
	if got := (decision{}).message(); got != "no nodes available to schedule pods" {
		t.Errorf("empty cluster message %q", got)
	}
}

// snapshot copies what a scheduling cycle would see.
func (c *clusterCache) snapshot(group string) nodeViews {
	var out nodeViews
	c.withNodes(group, func(l nodeList, _ placedPods) {
		for i := range l.Len() {
			out = append(out, l.At(i))
		}
	})
	return out
}

func TestCacheAssumeConfirmForget(t *testing.T) {
	c := newCache()
	c.setNode(testNode("a", "2", "4Gi"))
	p := testPod("p", "1", "1Gi")
	c.assume(p, "a")
	if got := c.snapshot(spreadGroup(p))[0]; got.usage.Requested.MilliCPU != 1000 || got.group != 1 {
		t.Fatalf("after assume: %+v", got)
	}
	bound := p.DeepCopy()
	bound.Spec.NodeName = "a"
	c.observePod(bound) // the watch confirms: counted once, not twice
	c.unassume(p.UID)   // a late failure report must not drop a confirmed pod
	if got := c.snapshot("")[0].usage.Requested.MilliCPU; got != 1000 {
		t.Fatalf("after confirm: %dm, want 1000m", got)
	}
	done := bound.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	c.observePod(done)
	if got := c.snapshot("")[0].usage.Requested; !reflect.DeepEqual(got, fit.Resources{}) {
		t.Fatalf("a finished pod still holds %+v", got)
	}
}

func TestCacheListsEachKnownNodeOnce(t *testing.T) {
	c := newCache()
	c.setNode(testNode("a", "2", "4Gi"))
	c.setNode(testNode("b", "2", "4Gi"))
	c.setNode(testNode("a", "4", "8Gi")) // an update, not a second node
	p := testPod("p", "1", "1Gi")
	p.Spec.NodeName = "c"
	c.observePod(p) // a pod on a node not (yet) known: counted, not listed
	names := func() []string {
		var out []string
		for _, v := range c.snapshot("") {
			out = append(out, v.node.Node.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("listed %v, want [a b]", got)
	}
	c.removeNode("a")
	c.removeNode("a") // a repeated delete changes nothing
	c.setNode(testNode("c", "2", "4Gi"))
	if got := names(); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("listed %v, want [b c]", got)
	}
	for _, v := range c.snapshot("") {
		if v.node.Node.Name == "c" && v.usage.Requested.MilliCPU != 1000 {
			t.Errorf("node c lost the pod observed before it: %+v", v.usage)
		}
	}
}

func TestFeasibleNodesToFindFollowsUpstream(t *testing.T) {
	for total, want := range map[int]int{10: 10, 100: 100, 300: 144, 1000: 420, 5000: 500, 20000: 1000} {
		if got := feasibleNodesToFind(total); got != want {
			t.Errorf("feasibleNodesToFind(%d) = %d, want %d", total, got, want)
		}
	}
}

// One scheduling decision among 1000 nodes: the scheduler's own cost per pod.
func BenchmarkSchedule1000Nodes(b *testing.B) {
	nodes := make(nodeViews, 1000)
	for i := range nodes {
		nodes[i] = view(testNode(fmt.Sprintf("n%04d", i), "4", "16Gi"), i%3, testPod("x", "100m", "128Mi"))
	}
	pod := testPod("p", "100m", "128Mi")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if schedule(pod, nodes, podChecks{}, i).node == "" {
			b.Fatal("no node")
		}
	}
}
