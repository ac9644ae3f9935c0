package scheduler

import (
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth/berth/internal/fit"
)

// nodeState is the scheduler's view of one node: the object and the pods it
// holds (bound, or assumed while their binding is in flight).
type nodeState struct {
	node  *fit.Node
	pods  map[types.UID]*v1.Pod
	usage fit.Usage
	// groups counts the node's pods per spread group (see spreadGroup).
	groups map[string]int
}

// clusterCache is the scheduler's model of the cluster, fed by informers and by its
// own assumptions, so that decisions made in quick succession see each other
// before the API server's watch reports the bindings.
type clusterCache struct {
	mu    sync.RWMutex
	nodes map[string]*nodeState
	// listed holds the states whose Node object is known, in a stable order
	// that scheduling cycles read by position.
	listed  []*nodeState
	podNode map[types.UID]string // where each counted pod is, assumed or bound
	assumed map[types.UID]bool
	// withTerms holds the counted pods with any pod (anti-)affinity term,
	// parsed: every cycle checks them, so they are kept apart from the rest.
	withTerms map[types.UID]*podTerms
}

func newCache() *clusterCache {
	return &clusterCache{nodes: map[string]*nodeState{}, podNode: map[types.UID]string{}, assumed: map[types.UID]bool{},
		withTerms: map[types.UID]*podTerms{}}
}

func (c *clusterCache) stateLocked(name string) *nodeState {
	s, ok := c.nodes[name]
	if !ok {
		s = &nodeState{pods: map[types.UID]*v1.Pod{}, groups: map[string]int{}}
		c.nodes[name] = s
	}
	return s
}

func (c *clusterCache) setNode(n *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prepared := fit.NewNode(n)
	s := c.stateLocked(n.Name)
	if s.node == nil {
		c.listed = append(c.listed, s)
	}
	s.node = &prepared
}

func (c *clusterCache) removeNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.nodes[name]; ok && s.node != nil {
		s.node = nil
		c.listed = slices.DeleteFunc(c.listed, func(l *nodeState) bool { return l == s })
		if len(s.pods) == 0 {
			delete(c.nodes, name)
		}
	}
}

// counts reports whether a pod holds resources on its node: bound and not finished.
func counts(p *v1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

// observePod records a pod as the API server reports it, confirming or
// replacing any assumption made for it.
func (c *clusterCache) observePod(p *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(p.UID)
	if counts(p) {
		c.addLocked(p, p.Spec.NodeName)
	}
}

func (c *clusterCache) forgetPod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(uid)
}

// assume counts pod on node before the binding is confirmed. It refuses
// (false) when the pod is already counted: the watch reported it bound
// while the cycle decided, and replacing that binding with an assumption
// would let a failed bind's unassume drop the pod from its node's usage.
func (c *clusterCache) assume(p *v1.Pod, node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, counted := c.podNode[p.UID]; counted {
		return false
	}
	c.addLocked(p, node)
	c.assumed[p.UID] = true
	return true
}

// unassume drops an assumption whose binding failed (and only an assumption:
// a pod the watch has since confirmed stays).
func (c *clusterCache) unassume(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.assumed[uid] {
		c.removeLocked(uid)
	}
}

func (c *clusterCache) isAccounted(uid types.UID) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.podNode[uid]
	return ok
}

func (c *clusterCache) addLocked(p *v1.Pod, node string) {
	s := c.stateLocked(node)
	s.pods[p.UID] = p
	s.usage = s.usage.Add(p)
	s.groups[spreadGroup(p)]++
	c.podNode[p.UID] = node
	// Terms that do not parse (a selector the API server's validation
	// let through) are not honoured: they must not stop every other pod
	// from being scheduled.
	if terms, err := newPodTerms(p); err == nil && terms != nil {
		c.withTerms[p.UID] = terms
	}
}

func (c *clusterCache) removeLocked(uid types.UID) {
	delete(c.assumed, uid)
	node, ok := c.podNode[uid]
	if !ok {
		return
	}
	delete(c.podNode, uid)
	delete(c.withTerms, uid)
	s := c.nodes[node]
	if p, ok := s.pods[uid]; ok {
		s.usage = s.usage.Remove(p)
		if g := spreadGroup(p); s.groups[g] <= 1 {
			delete(s.groups, g)
		} else {
			s.groups[g]--
		}
		delete(s.pods, uid)
	}
	if s.node == nil && len(s.pods) == 0 {
		delete(c.nodes, node)
	}
}

// nodeView is one node's state as a scheduling cycle sees it.
type nodeView struct {
	node  fit.Node
	usage fit.Usage
	// group counts the node's pods in the same spread group as the pod being scheduled.
	group int
	// pods are the node's counted pods (preemption picks its victims
	// among them); read-only, valid only under the cache's lock.
	pods map[types.UID]*v1.Pod
}

// withNodes runs fn over every known node, counting pods of group, and the
// counted pods, under the cache's read lock. A cycle reads the live state
// rather than a copy: copying 1000 nodes for every pod was most of the
// scheduler's CPU time. fn must not keep the list or the pods or call back
// into the cache.
func (c *clusterCache) withNodes(group string, fn func(nodeList, placedPods)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	fn(liveNodes{states: c.listed, group: group}, placedPods{c})
}

// placedPods reads the cache's counted pods; valid only under its lock.
type placedPods struct{ c *clusterCache }

// all yields every counted pod with its node.
func (p placedPods) all(yield func(placedPod) bool) {
	for _, s := range p.c.nodes {
		for _, pod := range s.pods {
			if !yield(placedPod{pod: pod, node: s.nodeObject()}) {
				return
			}
		}
	}
}

// withAffinityTerms yields the counted pods with any pod (anti-)affinity term.
func (p placedPods) withAffinityTerms(yield func(placedWithTerms) bool) {
	for uid, terms := range p.c.withTerms {
		s := p.c.nodes[p.c.podNode[uid]]
		if !yield(placedWithTerms{placedPod: placedPod{pod: s.pods[uid], node: s.nodeObject()}, terms: terms}) {
			return
		}
	}
}

func (s *nodeState) nodeObject() *v1.Node {
	if s == nil || s.node == nil {
		return nil
	}
	return s.node.Node
}

// liveNodes is the cache's nodeList; valid only under the cache's lock.
type liveNodes struct {
	states []*nodeState
	group  string
}

func (l liveNodes) Len() int { return len(l.states) }

func (l liveNodes) Node(i int) *v1.Node { return l.states[i].node.Node }

func (l liveNodes) At(i int) nodeView {
	s := l.states[i]
	return nodeView{node: *s.node, usage: s.usage, group: s.groups[l.group], pods: s.pods}
}

// spreadGroup names the set of pods a pod should be spread among: those
// with the same controller, or failing that, the same labels.
func spreadGroup(p *v1.Pod) string {
	if ref := metav1.GetControllerOf(p); ref != nil {
		return "owner/" + string(ref.UID)
	}
	return p.Namespace + "/" + labels.Set(p.Labels).String()
}
