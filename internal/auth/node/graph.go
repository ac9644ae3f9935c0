package node

import (
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podKey names one pod.
type podKey struct{ namespace, name string }

// boundPod is what the graph remembers of a pod: its node, identity and
// what it references.
type boundPod struct {
	node           string
	uid            types.UID
	serviceAccount string
	refs           []objectRef
}

// PodIdentity is who a bound pod is: NodeRestriction checks that what a
// node asks for on a pod's behalf (a PodCertificateRequest) names it.
type PodIdentity struct {
	Node           string
	UID            types.UID
	ServiceAccount string
}

func newBoundPod(pod *corev1.Pod) boundPod {
	return boundPod{node: pod.Spec.NodeName, uid: pod.UID, serviceAccount: pod.Spec.ServiceAccountName, refs: podReferences(pod)}
}

// Graph records which node each pod is bound to, which objects each node's
// pods reference, and who requested each CSR. It answers the Node
// authorizer's questions; until Run has synced it, it answers no.
type Graph struct {
	mu     sync.RWMutex
	synced bool
	pods   map[podKey]boundPod
	// users counts, per referenced object, the pods of each node that
	// reference it: an object stays readable to a node while any of its
	// pods needs it.
	users map[objectRef]map[string]int
	// csrUsers is the requesting user of each CSR.
	csrUsers map[string]string
}

// NewGraph returns an empty graph that is not yet synced.
func NewGraph() *Graph {
	return &Graph{pods: map[podKey]boundPod{}, users: map[objectRef]map[string]int{}, csrUsers: map[string]string{}}
}

// SetPod records pod's current binding and references. Unbound pods are
// forgotten: they give no node anything.
func (g *Graph) SetPod(pod *corev1.Pod) {
	g.setPod(podKey{pod.Namespace, pod.Name}, newBoundPod(pod))
}

func (g *Graph) setPod(key podKey, bp boundPod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgetPodLocked(key)
	if bp.node == "" {
		return
	}
	g.pods[key] = bp
	for _, ref := range bp.refs {
		if g.users[ref] == nil {
			g.users[ref] = map[string]int{}
		}
		g.users[ref][bp.node]++
	}
}

// DeletePod forgets a pod.
func (g *Graph) DeletePod(namespace, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgetPodLocked(podKey{namespace, name})
}

func (g *Graph) forgetPodLocked(key podKey) {
	old, ok := g.pods[key]
	if !ok {
		return
	}
	delete(g.pods, key)
	for _, ref := range old.refs {
		g.users[ref][old.node]--
		if g.users[ref][old.node] == 0 {
			delete(g.users[ref], old.node)
		}
		if len(g.users[ref]) == 0 {
			delete(g.users, ref)
		}
	}
}

// SetCSR records who requested csr.
func (g *Graph) SetCSR(csr *certificatesv1.CertificateSigningRequest) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.csrUsers[csr.Name] = csr.Spec.Username
}

// DeleteCSR forgets a CSR.
func (g *Graph) DeleteCSR(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.csrUsers, name)
}

// MarkSynced records that the graph reflects the store as of some moment,
// so its answers may be trusted.
func (g *Graph) MarkSynced() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.synced = true
}

// Synced reports whether the graph may be asked yet.
func (g *Graph) Synced() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.synced
}

// PodBoundTo reports whether pod namespace/name is bound to node.
func (g *Graph) PodBoundTo(namespace, name, node string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	bp, ok := g.pods[podKey{namespace, name}]
	return ok && bp.node == node
}

// BoundPod returns the identity of pod namespace/name if it is bound.
func (g *Graph) BoundPod(namespace, name string) (PodIdentity, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	bp, ok := g.pods[podKey{namespace, name}]
	return PodIdentity{Node: bp.node, UID: bp.uid, ServiceAccount: bp.serviceAccount}, ok
}

// Referenced reports whether some pod bound to node references the object.
func (g *Graph) Referenced(node string, k kind, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.users[objectRef{kind: k, namespace: namespace, name: name}][node] > 0
}

// CSRRequestedBy reports whether CSR name was requested by user.
func (g *Graph) CSRRequestedBy(name, user string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	requester, ok := g.csrUsers[name]
	return ok && requester == user
}
