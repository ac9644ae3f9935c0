package scheduler

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth/berth/internal/fit"
)

// Taints kube-scheduler users know from nodes that are not ready or cordoned;
// berth filters on the node's condition and flag and reports them the same way.
const (
	taintNotReady      = "node.kubernetes.io/not-ready"
	taintUnschedulable = "node.kubernetes.io/unschedulable"
)

// decision is the outcome of one scheduling cycle.
type decision struct {
	node string
	// When node is "": per-reason counts of the nodes that were filtered out.
	reasons  map[string]int
	numNodes int
}

// minFeasibleNodes and the adaptive percentage below follow kube-scheduler's
// percentageOfNodesToScore: in a large cluster, once enough feasible nodes
// are found, scoring them all gains little and costs a lot.
const minFeasibleNodes = 100

func feasibleNodesToFind(total int) int {
	if total <= minFeasibleNodes {
		return total
	}
	percent := max(50-total/125, 5)
	return max(total*percent/100, minFeasibleNodes)
}

// nodeList is the nodes one scheduling cycle considers, by position. The
// cache serves it from its live state under a read lock (see
// clusterCache.withNodes), so a cycle copies only what it looks at.
type nodeList interface {
	Len() int
	At(i int) nodeView
	// Node is At(i)'s node object alone, for checks that need no more.
	Node(i int) *v1.Node
}

// nodeViews is a fixed nodeList.
type nodeViews []nodeView

func (v nodeViews) Len() int            { return len(v) }
func (v nodeViews) At(i int) nodeView   { return v[i] }
func (v nodeViews) Node(i int) *v1.Node { return v[i].node.Node }

// podChecks are the filters and scores beyond the node's own fit,
// prepared for one pod in one cycle: those that depend on other pods (nil:
// none applies), and the pod's soft preferences of nodes.
type podChecks struct {
	spread      *spreadCheck
	interPod    *interPodCheck
	preferences nodePreferences
}

// scores sums the checks' weighted scores of the feasible nodes; nil when
// none applies (no score that could tell the nodes apart).
func (c podChecks) scores(nodes nodeList, feasible []int) []int64 {
	var sum []int64
	add := func(scores []int64, weight int64) {
		if scores == nil {
			return
		}
		if sum == nil {
			sum = make([]int64, len(feasible))
		}
		for i, v := range scores {
			sum[i] += weight * v
		}
	}
	add(c.interPod.preferenceScores(nodes, feasible), interPodWeight)
	add(c.spread.scores(nodes, feasible), topologySpreadWeight)
	add(c.preferences.scores(nodes, feasible), 1) // weighted inside: two scores
	return sum
}

// schedule filters the nodes pod fits, starting at offset (rotated by the
// caller so every node gets its turn), and picks the best-scoring one.
func schedule(pod *v1.Pod, nodes nodeList, checks podChecks, offset int) decision {
	total := nodes.Len()
	d := decision{numNodes: total, reasons: map[string]int{}}
	prepared := fit.NewPod(pod)
	want := feasibleNodesToFind(total)
	// Positions, not copies: scoring re-reads the few it needs.
	feasible := make([]int, 0, want)
	maxGroup := 0
	for i := range total {
		at := (offset + i) % total
		n := nodes.At(at)
		reasons := filter(pod, prepared, checks, n)
		if len(reasons) == 0 {
			maxGroup = max(maxGroup, n.group)
			if feasible = append(feasible, at); len(feasible) == want {
				break
			}
			continue
		}
		for _, r := range reasons {
			d.reasons[r]++
		}
	}
	if len(feasible) == 0 {
		return d
	}
	requests := fit.PodRequests(pod)
	extra := checks.scores(nodes, feasible)
	best, bestScore := "", int64(-1)
	for i, at := range feasible {
		n := nodes.At(at)
		s := score(requests, n, maxGroup)
		if extra != nil {
			s += extra[i]
		}
		// Ties go to the lexically smallest name, so decisions are reproducible.
		if s > bestScore || (s == bestScore && n.node.Node.Name < best) {
			best, bestScore = n.node.Node.Name, s
		}
	}
	d.node = best
	return d
}

// filter returns why pod cannot go to n (nil: it can). Topology spread and
// inter-pod affinity are judged last, as kube-scheduler's filters run, and
// only where the rest fit.
func filter(pod *v1.Pod, prepared *fit.Pod, checks podChecks, n nodeView) []string {
	node := n.node.Node
	if node.Spec.Unschedulable && !tolerates(pod, taintUnschedulable, v1.TaintEffectNoSchedule) {
		return []string{"node(s) were unschedulable"}
	}
	if !nodeReady(node) && !tolerates(pod, taintNotReady, v1.TaintEffectNoSchedule) {
		return []string{fmt.Sprintf("node(s) had untolerated taint {%s: }", taintNotReady)}
	}
	var reasons []string
	for _, f := range prepared.Fits(n.node, n.usage) {
		reasons = append(reasons, f.Reason)
	}
	if len(reasons) > 0 {
		return reasons
	}
	if r := checks.spread.reason(node); r != "" {
		return []string{r}
	}
	if r := checks.interPod.reason(node); r != "" {
		return []string{r}
	}
	return nil
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func tolerates(pod *v1.Pod, key string, effect v1.TaintEffect) bool {
	taint := &v1.Taint{Key: key, Effect: effect}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), taint, false) {
			return true
		}
	}
	return false
}

// interPodWeight and topologySpreadWeight are how much InterPodAffinity's
// and PodTopologySpread's scores (out of 100 each) count against each of
// score's: twice, as in kube-scheduler's default profile.
const (
	interPodWeight       = 2
	topologySpreadWeight = 2
)

// score weighs, out of 100 each: kube-scheduler's defaults weigh
// NodeResourcesFit (least allocated) and BalancedAllocation equally, and
// spreading pods of one group likewise.
func score(want fit.Resources, n nodeView, maxGroup int) int64 {
	alloc := n.node.Allocatable
	cpuFrac := fraction(n.usage.Requested.MilliCPU+want.MilliCPU, alloc.MilliCPU)
	memFrac := fraction(n.usage.Requested.Memory+want.Memory, alloc.Memory)
	leastAllocated := int64((2 - cpuFrac - memFrac) / 2 * 100)
	diff := cpuFrac - memFrac
	if diff < 0 {
		diff = -diff
	}
	balanced := int64((1 - diff) * 100)
	spread := int64(100)
	if maxGroup > 0 {
		spread = int64(100 * (maxGroup - n.group) / maxGroup)
	}
	return leastAllocated + balanced + spread
}

func fraction(used, capacity int64) float64 {
	if capacity <= 0 {
		return 1
	}
	return min(1, float64(used)/float64(capacity))
}

// message renders a failed decision as kube-scheduler does:
// "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {k: v}."
func (d decision) message() string {
	if d.numNodes == 0 {
		return "no nodes available to schedule pods"
	}
	parts := make([]string, 0, len(d.reasons))
	for r, n := range d.reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d nodes are available: %s.", d.numNodes, strings.Join(parts, ", "))
}

// scaleTo100 maps raw scores onto 0..100 between their lowest and highest:
// the highest to 100, or with invert the lowest; all 0 (or 100 with
// invert) when they are equal. kube-scheduler normalizes its
// InterPodAffinity and PodTopologySpread scores so.
func scaleTo100(raw []int64, invert bool) []int64 {
	lo, hi := raw[0], raw[0]
	for _, v := range raw {
		lo, hi = min(lo, v), max(hi, v)
	}
	out := make([]int64, len(raw))
	for i, v := range raw {
		switch {
		case hi == lo && invert:
			out[i] = 100
		case hi == lo:
			out[i] = 0
		case invert:
			out[i] = 100 * (hi - v) / (hi - lo)
		default:
			out[i] = 100 * (v - lo) / (hi - lo)
		}
	}
	return out
}
