// Package fit decides whether a pod fits a node given what is already bound
// there. It is the one definition of a node's constraints, shared by the
// scheduler's filters and by the API server's bind transaction, so the two
// can never disagree about what "fits" means.
package fit

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
)

// Resources is an amount of the scheduled resources.
type Resources struct {
	MilliCPU         int64 `json:"milliCPU,omitempty"`
	Memory           int64 `json:"memory,omitempty"`
	EphemeralStorage int64 `json:"ephemeralStorage,omitempty"`
	Pods             int64 `json:"pods,omitempty"`
	// Scalar are kube-scheduler's scalar resources (extended resources
	// such as example.com/gpu, hugepages, attachable volumes), by name;
	// nil while a pod or node has none, which is most of them.
	Scalar map[v1.ResourceName]int64 `json:"scalar,omitempty"`
}

// isScalar is kube-scheduler's IsScalarResourceName (pkg/scheduler/util,
// which would bring the scheduler framework into every binary).
func isScalar(name v1.ResourceName) bool {
	return v1helper.IsExtendedResourceName(name) || v1helper.IsHugePageResourceName(name) ||
		v1helper.IsPrefixedNativeResource(name) || v1helper.IsAttachableVolumeResourceName(name)
}

// scalars are list's scalar resources, nil if it has none.
func scalars(list v1.ResourceList) map[v1.ResourceName]int64 {
	var out map[v1.ResourceName]int64
	for name, q := range list {
		if isScalar(name) {
			if out == nil {
				out = map[v1.ResourceName]int64{}
			}
			out[name] = q.Value()
		}
	}
	return out
}

// HostPort is one host port claimed by a pod.
type HostPort struct {
	Protocol string `json:"protocol"`
	IP       string `json:"ip,omitempty"` // "" and 0.0.0.0 both mean every address
	Port     int32  `json:"port"`
}

// Usage is what the pods bound to a node hold: the per-node accounting record.
type Usage struct {
	Requested Resources  `json:"requested"`
	HostPorts []HostPort `json:"hostPorts,omitempty"`
}

// Failure is one reason a pod does not fit a node.
type Failure struct {
	// Reason is phrased as kube-scheduler phrases it ("Insufficient cpu",
	// "node(s) didn't match Pod's node affinity/selector", ...), so the
	// scheduler's aggregated message reads as users expect.
	Reason string
	// Unresolvable means no amount of waiting lets the pod fit this node
	// (affinity, taints, a request larger than allocatable): 422 rather than 409.
	Unresolvable bool
}

// PodRequests sums a pod's effective requests (init containers, sidecars and
// pod overhead counted as upstream does), with the pod itself as one Pods unit.
// A pod being resized in place counts the larger of what it asks and what
// its node allocated (its status), as kube-scheduler counts it
// (UseStatusResources); an infeasible resize counts what was allocated.
func PodRequests(pod *v1.Pod) Resources {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	return Resources{
		MilliCPU:         quantity(reqs, v1.ResourceCPU).MilliValue(),
		Memory:           quantity(reqs, v1.ResourceMemory).Value(),
		EphemeralStorage: quantity(reqs, v1.ResourceEphemeralStorage).Value(),
		Pods:             1,
		Scalar:           scalars(reqs),
	}
}

// Equal reports whether r and o are the same amounts.
func (r Resources) Equal(o Resources) bool {
	return r.MilliCPU == o.MilliCPU && r.Memory == o.Memory && r.EphemeralStorage == o.EphemeralStorage &&
		r.Pods == o.Pods && maps.Equal(r.Scalar, o.Scalar)
}

// Allocatable reads a node's allocatable resources.
func Allocatable(node *v1.Node) Resources {
	a := node.Status.Allocatable
	return Resources{
		MilliCPU:         quantity(a, v1.ResourceCPU).MilliValue(),
		Memory:           quantity(a, v1.ResourceMemory).Value(),
		EphemeralStorage: quantity(a, v1.ResourceEphemeralStorage).Value(),
		Pods:             quantity(a, v1.ResourcePods).Value(),
		Scalar:           scalars(a),
	}
}

func quantity(list v1.ResourceList, name v1.ResourceName) *resource.Quantity {
	if q, ok := list[name]; ok {
		return &q
	}
	return resource.NewQuantity(0, resource.DecimalSI)
}

// PodHostPorts lists the host ports a pod's containers claim.
func PodHostPorts(pod *v1.Pod) []HostPort {
	var ports []HostPort
	add := func(cs []v1.Container) {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort <= 0 {
					continue
				}
				proto := string(p.Protocol)
				if proto == "" {
					proto = string(v1.ProtocolTCP)
				}
				ports = append(ports, HostPort{Protocol: proto, IP: p.HostIP, Port: p.HostPort})
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	return ports
}

// Add returns u with pod's share added.
func (u Usage) Add(pod *v1.Pod) Usage {
	out := Usage{Requested: u.Requested.plus(PodRequests(pod), 1)}
	out.HostPorts = append(slices.Clone(u.HostPorts), PodHostPorts(pod)...)
	return out
}

// Remove returns u with pod's share released (never below zero).
func (u Usage) Remove(pod *v1.Pod) Usage {
	out := Usage{Requested: u.Requested.plus(PodRequests(pod), -1)}
	out.HostPorts = slices.Clone(u.HostPorts)
	for _, p := range PodHostPorts(pod) {
		if i := slices.Index(out.HostPorts, p); i >= 0 {
			out.HostPorts = slices.Delete(out.HostPorts, i, i+1)
		}
	}
	return out
}

// plus returns r + sign*o, floored at zero so a double release cannot go
// negative. r's scalars are copied, never changed: usages are shared.
func (r Resources) plus(o Resources, sign int64) Resources {
	out := Resources{
		MilliCPU:         max(0, r.MilliCPU+sign*o.MilliCPU),
		Memory:           max(0, r.Memory+sign*o.Memory),
		EphemeralStorage: max(0, r.EphemeralStorage+sign*o.EphemeralStorage),
		Pods:             max(0, r.Pods+sign*o.Pods),
		Scalar:           r.Scalar,
	}
	if len(o.Scalar) > 0 {
		out.Scalar = maps.Clone(r.Scalar)
		if out.Scalar == nil {
			out.Scalar = map[v1.ResourceName]int64{}
		}
		for name, v := range o.Scalar {
			if n := max(0, out.Scalar[name]+sign*v); n > 0 {
				out.Scalar[name] = n
			} else {
				delete(out.Scalar, name)
			}
		}
		if len(out.Scalar) == 0 {
			out.Scalar = nil
		}
	}
	return out
}

// Pod is a pod prepared for checking against many nodes: its requests,
// host ports and required node affinity are computed once.
type Pod struct {
	pod      *v1.Pod
	requests Resources
	ports    []HostPort
	affinity nodeaffinity.RequiredNodeAffinity
}

// NewPod prepares pod for Fits.
func NewPod(pod *v1.Pod) *Pod {
	return &Pod{pod: pod, requests: PodRequests(pod), ports: PodHostPorts(pod), affinity: nodeaffinity.GetRequiredNodeAffinity(pod)}
}

// Node is a node prepared for checking many pods: its allocatable resources parsed once.
type Node struct {
	Node        *v1.Node
	Allocatable Resources
}

// NewNode prepares node for Fits.
func NewNode(node *v1.Node) Node { return Node{Node: node, Allocatable: Allocatable(node)} }

// Check returns every reason pod does not fit node given used; none means it fits.
func Check(pod *v1.Pod, node *v1.Node, used Usage) []Failure {
	return NewPod(pod).Fits(NewNode(node), used)
}

// Fits returns every reason p does not fit n given used; none means it fits.
func (p *Pod) Fits(n Node, used Usage) []Failure {
	var fails []Failure
	fails = append(fails, checkNode(n.Node)...)
	fails = append(fails, p.checkAffinity(n.Node)...)
	fails = append(fails, checkTaints(p.pod, n.Node)...)
	fails = append(fails, p.checkResources(n.Allocatable, used)...)
	fails = append(fails, p.checkHostPorts(used)...)
	return fails
}

func checkNode(node *v1.Node) []Failure {
	if node.DeletionTimestamp != nil {
		return []Failure{{Reason: "node(s) were being deleted", Unresolvable: true}}
	}
	return nil
}

// reasonAffinity is kube-scheduler's NodeAffinity filter's reason.
const reasonAffinity = "node(s) didn't match Pod's node affinity/selector"

func (p *Pod) checkAffinity(node *v1.Node) []Failure {
	if ok, _ := p.affinity.Match(node); !ok {
		return []Failure{{Reason: reasonAffinity, Unresolvable: true}}
	}
	return nil
}

// UntoleratedTaint finds a NoSchedule or NoExecute taint of node that pod
// does not tolerate.
func UntoleratedTaint(pod *v1.Pod, node *v1.Node) (v1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}, false)
}

func checkTaints(pod *v1.Pod, node *v1.Node) []Failure {
	taint, untolerated := UntoleratedTaint(pod, node)
	if untolerated {
		return []Failure{{Reason: fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value), Unresolvable: true}}
	}
	return nil
}

// shortfall is one resource a pod asks more of than its node has left.
type shortfall struct {
	name             v1.ResourceName
	want, used, have int64
}

// shortfalls lists, in kube-scheduler's order (pods, cpu, memory,
// ephemeral-storage), the resources p asks more of than alloc leaves after used.
func (p *Pod) shortfalls(alloc Resources, used Usage) []shortfall {
	want := p.requests
	var short []shortfall
	for _, r := range []shortfall{
		{v1.ResourcePods, want.Pods, used.Requested.Pods, alloc.Pods},
		{v1.ResourceCPU, want.MilliCPU, used.Requested.MilliCPU, alloc.MilliCPU},
		{v1.ResourceMemory, want.Memory, used.Requested.Memory, alloc.Memory},
		{v1.ResourceEphemeralStorage, want.EphemeralStorage, used.Requested.EphemeralStorage, alloc.EphemeralStorage},
	} {
		if r.want != 0 && r.used+r.want > r.have {
			short = append(short, r)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want.Scalar)) {
		r := shortfall{name, want.Scalar[name], used.Requested.Scalar[name], alloc.Scalar[name]}
		if r.want != 0 && r.used+r.want > r.have {
			short = append(short, r)
		}
	}
	return short
}

func (p *Pod) checkResources(alloc Resources, used Usage) []Failure {
	var fails []Failure
	for _, r := range p.shortfalls(alloc, used) {
		reason := "Insufficient " + string(r.name)
		if r.name == v1.ResourcePods {
			reason = "Too many pods"
		}
		fails = append(fails, Failure{Reason: reason, Unresolvable: r.want > r.have})
	}
	return fails
}

// reasonPortsTaken is kube-scheduler's NodePorts filter's reason.
const reasonPortsTaken = "node(s) didn't have free ports for the requested pod ports"

func (p *Pod) checkHostPorts(used Usage) []Failure {
	if p.portsTaken(used) {
		return []Failure{{Reason: reasonPortsTaken}}
	}
	return nil
}

// portsTaken reports whether a host port p claims is held on the node.
func (p *Pod) portsTaken(used Usage) bool {
	for _, want := range p.ports {
		for _, have := range used.HostPorts {
			if portsConflict(want, have) {
				return true
			}
		}
	}
	return false
}

func portsConflict(a, b HostPort) bool {
	if a.Port != b.Port || a.Protocol != b.Protocol {
		return false
	}
	return wildcard(a.IP) || wildcard(b.IP) || a.IP == b.IP
}

func wildcard(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
