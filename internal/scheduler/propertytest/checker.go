// Package propertytest checks berth's central scheduling property end to
// end: replaying what each node saw through its own watch, at no revision
// does the set of pods bound to a node violate the node's constraints.
//
// The checker here restates the constraints on its own, without
// internal/fit, so that a mistake in fit (which both the scheduler and the
// bind transaction use) cannot hide itself by agreeing with the test. It
// covers what the property test's pods use: container requests (no init
// containers or overhead), host ports, nodeSelector, and taints.
package propertytest

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Event is one change a node's watch delivered, in the order delivered.
type Event struct {
	Type     string // "ADDED", "MODIFIED" or "DELETED", as watch.EventType
	Revision int64  // the event's resourceVersion
	Pod      *v1.Pod
}

// Violation is one revision at which a node's set broke a constraint (or at
// which the watch itself misbehaved).
type Violation struct {
	Node     string
	Revision int64
	Problem  string
}

func (v Violation) String() string {
	return fmt.Sprintf("node %s at revision %d: %s", v.Node, v.Revision, v.Problem)
}

// Replay applies a node's watch history in order and checks the node's set
// after every event; it also checks that revisions strictly increase and
// that every pod in the history is bound to this node.
func Replay(node *v1.Node, history []Event) []Violation {
	var out []Violation
	set := map[types.UID]*v1.Pod{}
	var last int64
	for _, ev := range history {
		report := func(format string, args ...any) {
			out = append(out, Violation{Node: node.Name, Revision: ev.Revision, Problem: fmt.Sprintf(format, args...)})
		}
		if ev.Revision <= last {
			report("revision not after the previous event's %d", last)
		}
		last = ev.Revision
		switch {
		case ev.Type == "DELETED" || !holdsShare(ev.Pod):
			delete(set, ev.Pod.UID)
		case ev.Pod.Spec.NodeName != node.Name:
			report("pod %s bound to %q appeared in this node's watch", ev.Pod.Name, ev.Pod.Spec.NodeName)
		default:
			set[ev.Pod.UID] = ev.Pod
		}
		for _, problem := range SetViolations(node, podsOf(set)) {
			report("%s", problem)
		}
	}
	return out
}

// holdsShare says whether a pod occupies its node: finished pods do not.
func holdsShare(p *v1.Pod) bool {
	return p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

func podsOf(set map[types.UID]*v1.Pod) []*v1.Pod {
	pods := make([]*v1.Pod, 0, len(set))
	for _, p := range set {
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods
}

// SetViolations lists every constraint the set of pods breaks on node.
func SetViolations(node *v1.Node, pods []*v1.Pod) []string {
	var problems []string
	var used requests
	for i, p := range pods {
		used = used.plus(podRequests(p))
		for _, r := range placementReasons(p, node) {
			problems = append(problems, fmt.Sprintf("pod %s: %s", p.Name, r))
		}
		for _, q := range pods[:i] {
			if portsClash(p, q) {
				problems = append(problems, fmt.Sprintf("pods %s and %s claim the same host port", q.Name, p.Name))
			}
		}
	}
	alloc := allocatable(node)
	if int64(len(pods)) > alloc.pods {
		problems = append(problems, fmt.Sprintf("%d pods exceed the node's %d", len(pods), alloc.pods))
	}
	if used.milliCPU > alloc.milliCPU {
		problems = append(problems, fmt.Sprintf("cpu requests %dm exceed allocatable %dm", used.milliCPU, alloc.milliCPU))
	}
	if used.memory > alloc.memory {
		problems = append(problems, fmt.Sprintf("memory requests %d exceed allocatable %d", used.memory, alloc.memory))
	}
	return problems
}

// Reasons lists, in kube-scheduler's words, why pod cannot join the pods
// already bound to node (none: it fits).
func Reasons(pod *v1.Pod, node *v1.Node, bound []*v1.Pod) []string {
	out := placementReasons(pod, node)
	var used requests
	for _, p := range bound {
		used = used.plus(podRequests(p))
	}
	want, alloc := podRequests(pod), allocatable(node)
	if int64(len(bound))+1 > alloc.pods {
		out = append(out, "Too many pods")
	}
	if want.milliCPU > 0 && used.milliCPU+want.milliCPU > alloc.milliCPU {
		out = append(out, "Insufficient cpu")
	}
	if want.memory > 0 && used.memory+want.memory > alloc.memory {
		out = append(out, "Insufficient memory")
	}
	for _, p := range bound {
		if portsClash(pod, p) {
			out = append(out, "node(s) didn't have free ports for the requested pod ports")
			break
		}
	}
	return out
}

// UnschedulableMessage is what a scheduler must say of a pod that fits none
// of nodes, given the pods bound to each: kube-scheduler's aggregate
// "0/N nodes are available: 2 Insufficient cpu, 1 node(s) ...".
func UnschedulableMessage(pod *v1.Pod, nodes []*v1.Node, bound map[string][]*v1.Pod) (msg string, fitsSomewhere bool) {
	counts := map[string]int{}
	for _, n := range nodes {
		reasons := Reasons(pod, n, bound[n.Name])
		if len(reasons) == 0 {
			return "", true
		}
		for _, r := range reasons {
			counts[r]++
		}
	}
	parts := make([]string, 0, len(counts))
	for r, c := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", c, r))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d nodes are available: %s.", len(nodes), strings.Join(parts, ", ")), false
}

// placementReasons are the constraints that depend on the node alone: its
// labels (nodeSelector) and its NoSchedule/NoExecute taints (the first
// untolerated one is named, as kube-scheduler does).
func placementReasons(pod *v1.Pod, node *v1.Node) []string {
	var out []string
	for k, v := range pod.Spec.NodeSelector {
		if have, ok := node.Labels[k]; !ok || have != v {
			out = append(out, "node(s) didn't match Pod's node affinity/selector")
			break
		}
	}
	for _, taint := range node.Spec.Taints {
		if taint.Effect == v1.TaintEffectPreferNoSchedule || tolerated(pod, taint) {
			continue
		}
		return append(out, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
	}
	return out
}

func tolerated(pod *v1.Pod, taint v1.Taint) bool {
	for _, t := range pod.Spec.Tolerations {
		keyOK := t.Key == taint.Key || (t.Key == "" && t.Operator == v1.TolerationOpExists)
		valueOK := t.Operator == v1.TolerationOpExists || t.Value == taint.Value
		effectOK := t.Effect == "" || t.Effect == taint.Effect
		if keyOK && valueOK && effectOK {
			return true
		}
	}
	return false
}

type requests struct{ milliCPU, memory, pods int64 }

func (r requests) plus(o requests) requests {
	return requests{r.milliCPU + o.milliCPU, r.memory + o.memory, r.pods + o.pods}
}

func podRequests(p *v1.Pod) requests {
	r := requests{pods: 1}
	for _, c := range p.Spec.Containers {
		r.milliCPU += c.Resources.Requests.Cpu().MilliValue()
		r.memory += c.Resources.Requests.Memory().Value()
	}
	return r
}

func allocatable(n *v1.Node) requests {
	a := n.Status.Allocatable
	return requests{milliCPU: a.Cpu().MilliValue(), memory: a.Memory().Value(), pods: a.Pods().Value()}
}

// portsClash says whether two pods claim one host port: same port and
// protocol, on the same address or with either on every address.
func portsClash(a, b *v1.Pod) bool {
	for _, pa := range hostPorts(a) {
		for _, pb := range hostPorts(b) {
			if pa.HostPort == pb.HostPort && protocol(pa) == protocol(pb) &&
				(anyAddress(pa.HostIP) || anyAddress(pb.HostIP) || pa.HostIP == pb.HostIP) {
				return true
			}
		}
	}
	return false
}

func hostPorts(p *v1.Pod) []v1.ContainerPort {
	var out []v1.ContainerPort
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort > 0 {
				out = append(out, port)
			}
		}
	}
	return out
}

func protocol(p v1.ContainerPort) v1.Protocol {
	if p.Protocol == "" {
		return v1.ProtocolTCP
	}
	return p.Protocol
}

func anyAddress(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
