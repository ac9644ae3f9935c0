package fit

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(cpu, mem string, pods int64, mutate ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem),
			v1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
			v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
		}},
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func pod(cpu, mem string, mutate ...func(*v1.Pod)) *v1.Pod {
	c := v1.Container{Name: "c", Image: "i"}
	if cpu != "" {
		c.Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{c}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func withHostPort(port int32, ip string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: 80, HostPort: port, HostIP: ip})
	}
}

func TestCheck(t *testing.T) {
	taint := v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
	used := Usage{}.Add(pod("1500m", "1Gi", withHostPort(8080, "")))
	cases := []struct {
		name         string
		pod          *v1.Pod
		node         *v1.Node
		used         Usage
		want         string // substring of the joined reasons; "" = fits
		unresolvable bool
	}{
		{"fits", pod("500m", "1Gi"), node("2", "4Gi", 10), used, "", false},
		{"best-effort pod fits a full node", pod("", ""), node("1500m", "1Gi", 10), used, "", false},
		{"insufficient cpu now", pod("1", "1Gi"), node("2", "4Gi", 10), used, "Insufficient cpu", false},
		{"more cpu than the node has at all", pod("3", "1Gi"), node("2", "4Gi", 10), Usage{}, "Insufficient cpu", true},
		{"insufficient memory", pod("100m", "4Gi"), node("2", "4Gi", 10), used, "Insufficient memory", false},
		{"too many pods", pod("", ""), node("2", "4Gi", 1), used, "Too many pods", false},
		{"host port clash on wildcard", pod("", "", withHostPort(8080, "127.0.0.1")), node("2", "4Gi", 10), used, "free ports", false},
		{"other host port is fine", pod("", "", withHostPort(8081, "")), node("2", "4Gi", 10), used, "", false},
		{"node selector mismatch", pod("", "", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }), node("2", "4Gi", 10), Usage{}, "affinity/selector", true},
		{"node selector match", pod("", "", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }), node("2", "4Gi", 10), Usage{}, "", false},
		{"required affinity mismatch", pod("", "", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"c"}}}}}}}}
		}), node("2", "4Gi", 10), Usage{}, "affinity/selector", true},
		{"untolerated taint", pod("", ""), node("2", "4Gi", 10, func(n *v1.Node) { n.Spec.Taints = []v1.Taint{taint} }), Usage{}, "untolerated taint {dedicated: gpu}", true},
		{"tolerated taint", pod("", "", func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
		}), node("2", "4Gi", 10, func(n *v1.Node) { n.Spec.Taints = []v1.Taint{taint} }), Usage{}, "", false},
		{"PreferNoSchedule taint does not filter", pod("", ""), node("2", "4Gi", 10, func(n *v1.Node) {
			n.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectPreferNoSchedule}}
		}), Usage{}, "", false},
		{"node being deleted", pod("", ""), node("2", "4Gi", 10, func(n *v1.Node) { n.DeletionTimestamp = &metav1.Time{} }), Usage{}, "being deleted", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fails := Check(tc.pod, tc.node, tc.used)
			var reasons []string
			unresolvable := false
			for _, f := range fails {
				reasons = append(reasons, f.Reason)
				unresolvable = unresolvable || f.Unresolvable
			}
			joined := strings.Join(reasons, "; ")
			if tc.want == "" {
				if len(fails) != 0 {
					t.Fatalf("want fit, got %q", joined)
				}
				return
			}
			if !strings.Contains(joined, tc.want) {
				t.Fatalf("reasons %q lack %q", joined, tc.want)
			}
			if unresolvable != tc.unresolvable {
				t.Errorf("unresolvable = %v, want %v", unresolvable, tc.unresolvable)
			}
		})
	}
}

func TestUsageAddRemoveRoundTrip(t *testing.T) {
	a := pod("250m", "128Mi", withHostPort(80, ""))
	b := pod("500m", "256Mi", withHostPort(443, "10.0.0.1"))
	u := Usage{}.Add(a).Add(b)
	if u.Requested.MilliCPU != 750 || u.Requested.Pods != 2 || len(u.HostPorts) != 2 {
		t.Fatalf("after adds: %+v", u)
	}
	u = u.Remove(a)
	if u.Requested.MilliCPU != 500 || u.Requested.Memory != 256<<20 || u.Requested.Pods != 1 ||
		len(u.HostPorts) != 1 || u.HostPorts[0].Port != 443 {
		t.Fatalf("after remove: %+v", u)
	}
	u = u.Remove(b).Remove(b)
	if !reflect.DeepEqual(u.Requested, Resources{}) || len(u.HostPorts) != 0 {
		t.Fatalf("double release went below zero or left ports: %+v", u)
	}
}

func TestPodRequestsCountsInitContainersAsUpstream(t *testing.T) {
	p := pod("100m", "64Mi", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}
	})
	if got := PodRequests(p).MilliCPU; got != 1000 {
		t.Errorf("cpu = %dm, want the init container's 1000m (max of init and sum of app containers)", got)
	}
}

// Extended resources are counted and checked as kube-scheduler's
// NodeResourcesFit checks them: a pod asking for more than the node has
// left does not fit, and a node without the resource never fits it.
func TestExtendedResources(t *testing.T) {
	const gpu = v1.ResourceName("example.com/gpu")
	withGPUs := func(n int64) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[gpu] = *resource.NewQuantity(n, resource.DecimalSI)
			p.Spec.Containers[0].Resources.Limits = v1.ResourceList{gpu: *resource.NewQuantity(n, resource.DecimalSI)}
		}
	}
	gpuNode := node("4", "8Gi", 110, func(n *v1.Node) { n.Status.Allocatable[gpu] = *resource.NewQuantity(2, resource.DecimalSI) })
	one, two := pod("100m", "64Mi", withGPUs(1)), pod("100m", "64Mi", withGPUs(2))

	used := Usage{}.Add(one)
	if got := used.Requested.Scalar[gpu]; got != 1 {
		t.Fatalf("usage after one GPU pod: %d GPUs", got)
	}
	if fails := Check(one, gpuNode, used); len(fails) != 0 {
		t.Errorf("a second GPU of two: %+v, want a fit", fails)
	}
	fails := Check(two, gpuNode, used)
	if len(fails) != 1 || fails[0].Reason != "Insufficient example.com/gpu" || fails[0].Unresolvable {
		t.Errorf("two GPUs with one of two left: %+v, want a resolvable Insufficient example.com/gpu", fails)
	}
	fails = Check(one, node("4", "8Gi", 110), Usage{})
	if len(fails) != 1 || fails[0].Reason != "Insufficient example.com/gpu" || !fails[0].Unresolvable {
		t.Errorf("a GPU on a node without any: %+v, want an unresolvable Insufficient example.com/gpu", fails)
	}
	if after := used.Add(two).Remove(two); !reflect.DeepEqual(after, used) || used.Requested.Scalar[gpu] != 1 {
		t.Errorf("add then remove: %+v, original now %+v; want both as before", after, used)
	}
	if empty := used.Remove(one); empty.Requested.Scalar != nil {
		t.Errorf("usage after releasing every GPU keeps %v", empty.Requested.Scalar)
	}
}
