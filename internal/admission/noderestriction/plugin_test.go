package noderestriction

import (
	"context"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/berth/berth/internal/auth/node"
)

var (
	nodeA = &user.DefaultInfo{Name: "system:node:node-a", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	admin = &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}

	podsGVR   = corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR  = corev1.SchemeGroupVersion.WithResource("nodes")
	leasesGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")
	eventsGVR = corev1.SchemeGroupVersion.WithResource("events")
	newEvGVR  = eventsv1.SchemeGroupVersion.WithResource("events")
	saGVR     = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	pcrGVR    = certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests")
	csiGVR    = storagev1.SchemeGroupVersion.WithResource("csinodes")
)

// boundPods maps namespace/name to the node a pod is bound to; each pod's
// UID is "uid-<name>" and its service account "sa-<name>".
type boundPods map[string]string

func (b boundPods) BoundPod(namespace, name string) (node.PodIdentity, bool) {
	n, ok := b[namespace+"/"+name]
	return node.PodIdentity{Node: n, UID: types.UID("uid-" + name), ServiceAccount: "sa-" + name}, ok
}

// registeredNodes are nodes by name, each with UID "uid-<name>".
type registeredNodes []string

func (r registeredNodes) Get(name string) (*corev1.Node, error) {
	if !slices.Contains(r, name) {
		return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}, nil
}

// podCertificateRequest is a request node makes for pod, named as the
// fakes name them, with change applied.
func podCertificateRequest(nodeName, pod string, change func(*certificatesv1.PodCertificateRequestSpec)) *certificatesv1.PodCertificateRequest {
	req := &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "req-"},
		Spec: certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/signer", NodeName: types.NodeName(nodeName),
			NodeUID: types.UID("uid-" + nodeName), PodName: pod, PodUID: types.UID("uid-" + pod), ServiceAccountName: "sa-" + pod}}
	if change != nil {
		change(&req.Spec)
	}
	return req
}

func tokenFor(pod, kind string) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sa"},
		Spec:       authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: kind, APIVersion: "v1", Name: pod}},
	}
}

func pod(name, node string, terminating bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

func nodeObj(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func csiNode(name string) *storagev1.CSINode {
	return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func lease(ns, name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func coreEvent(host string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e"}, Source: corev1.EventSource{Component: "berth-agent", Host: host}}
}

// attrs describes one write by u.
func attrs(u user.Info, op admission.Operation, gvr schema.GroupVersionResource, sub string, obj, old runtime.Object) admission.Attributes {
	ns, name := "", ""
	for _, o := range []runtime.Object{obj, old} {
		if m, ok := o.(metav1.Object); ok {
			ns, name = m.GetNamespace(), m.GetName()
		}
	}
	if op == admission.Create {
		name = "" // a create names the object only in its body
		if m, ok := obj.(metav1.Object); ok {
			name = m.GetName()
		}
	}
	return admission.NewAttributesRecord(obj, old, schema.GroupVersionKind{}, ns, name, gvr, sub, op, nil, false, u)
}

func TestValidate(t *testing.T) {
	hostname := map[string]string{corev1.LabelHostname: "node-a"}
	withLabel := func(k, v string) map[string]string { return map[string]string{corev1.LabelHostname: "node-a", k: v} }
	taint := corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name  string
		attrs admission.Attributes
		allow bool
	}{
		{"create a pod", attrs(nodeA, admission.Create, podsGVR, "", pod("p", "node-a", false), nil), false},
		{"create a mirror-like pod bound to itself", attrs(nodeA, admission.Create, podsGVR, "", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "m", Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}, Spec: corev1.PodSpec{NodeName: "node-a"}}, nil), false},
		{"update own pod's status", attrs(nodeA, admission.Update, podsGVR, "status", pod("p", "node-a", false), pod("p", "node-a", false)), true},
		{"update another node's pod status", attrs(nodeA, admission.Update, podsGVR, "status", pod("p", "node-b", false), pod("p", "node-b", false)), false},
		{"claim a pod by its status", attrs(nodeA, admission.Update, podsGVR, "status", pod("p", "node-a", false), pod("p", "", false)), false},
		{"update own pod's spec", attrs(nodeA, admission.Update, podsGVR, "", pod("p", "node-a", false), pod("p", "node-a", false)), false},
		{"delete own terminating pod", attrs(nodeA, admission.Delete, podsGVR, "", nil, pod("p", "node-a", true)), true},
		{"delete own running pod", attrs(nodeA, admission.Delete, podsGVR, "", nil, pod("p", "node-a", false)), false},
		{"delete another node's terminating pod", attrs(nodeA, admission.Delete, podsGVR, "", nil, pod("p", "node-b", true)), false},
		{"evict own pod", attrs(nodeA, admission.Create, podsGVR, "eviction", &corev1.Pod{}, nil), false},
		{"bind a pod", attrs(nodeA, admission.Create, podsGVR, "binding", &corev1.Pod{}, nil), false},
		{"register itself", attrs(nodeA, admission.Create, nodesGVR, "", nodeObj("node-a", hostname, taint), nil), true},
		{"register itself with a node-role label", attrs(nodeA, admission.Create, nodesGVR, "", nodeObj("node-a", withLabel("node.kubernetes.io/instance-type", "x")), nil), true},
		{"register another node", attrs(nodeA, admission.Create, nodesGVR, "", nodeObj("node-b", nil), nil), false},
		{"register with a node-restriction label", attrs(nodeA, admission.Create, nodesGVR, "", nodeObj("node-a", withLabel("node-restriction.kubernetes.io/pool", "gold")), nil), false},
		{"register with a subdomain node-restriction label", attrs(nodeA, admission.Create, nodesGVR, "", nodeObj("node-a", withLabel("a.node-restriction.kubernetes.io/pool", "gold")), nil), false},
		{"register with a node-role.kubernetes.io label", attrs(nodeA, admission.Create, nodesGVR, "", nodeObj("node-a", withLabel("node-role.kubernetes.io/control-plane", "")), nil), false},
		{"register with its own label domain", attrs(nodeA, admission.Create, nodesGVR, "", nodeObj("node-a", withLabel("example.com/rack", "r1")), nil), true},
		{"update own status", attrs(nodeA, admission.Update, nodesGVR, "status", nodeObj("node-a", hostname), nodeObj("node-a", hostname)), true},
		{"update another node's status", attrs(nodeA, admission.Update, nodesGVR, "status", nodeObj("node-b", nil), nodeObj("node-b", nil)), false},
		{"keep an admin-set restricted label", attrs(nodeA, admission.Update, nodesGVR, "", nodeObj("node-a", withLabel("node-restriction.kubernetes.io/pool", "gold")), nodeObj("node-a", withLabel("node-restriction.kubernetes.io/pool", "gold"))), true},
		{"change a restricted label", attrs(nodeA, admission.Update, nodesGVR, "", nodeObj("node-a", withLabel("node-restriction.kubernetes.io/pool", "silver")), nodeObj("node-a", withLabel("node-restriction.kubernetes.io/pool", "gold"))), false},
		{"remove a restricted label", attrs(nodeA, admission.Update, nodesGVR, "", nodeObj("node-a", hostname), nodeObj("node-a", withLabel("node-restriction.kubernetes.io/pool", "gold"))), false},
		{"set a restricted label through status", attrs(nodeA, admission.Update, nodesGVR, "status", nodeObj("node-a", withLabel("node-restriction.kubernetes.io/pool", "gold")), nodeObj("node-a", hostname)), false},
		{"remove own taints", attrs(nodeA, admission.Update, nodesGVR, "", nodeObj("node-a", hostname), nodeObj("node-a", hostname, taint)), false},
		{"change a free label", attrs(nodeA, admission.Update, nodesGVR, "", nodeObj("node-a", withLabel("example.com/rack", "r2")), nodeObj("node-a", withLabel("example.com/rack", "r1"))), true},
		{"delete another node", attrs(nodeA, admission.Delete, nodesGVR, "", nil, nodeObj("node-b", nil)), false},
		{"delete itself", attrs(nodeA, admission.Delete, nodesGVR, "", nil, nodeObj("node-a", nil)), false},
		{"create own lease", attrs(nodeA, admission.Create, leasesGVR, "", lease(corev1.NamespaceNodeLease, "node-a"), nil), true},
		{"update own lease", attrs(nodeA, admission.Update, leasesGVR, "", lease(corev1.NamespaceNodeLease, "node-a"), lease(corev1.NamespaceNodeLease, "node-a")), true},
		{"create another node's lease", attrs(nodeA, admission.Create, leasesGVR, "", lease(corev1.NamespaceNodeLease, "node-b"), nil), false},
		{"create a lease elsewhere", attrs(nodeA, admission.Create, leasesGVR, "", lease("kube-system", "node-a"), nil), false},
		{"create own CSINode", attrs(nodeA, admission.Create, csiGVR, "", csiNode("node-a"), nil), true},
		{"create another node's CSINode", attrs(nodeA, admission.Create, csiGVR, "", csiNode("node-b"), nil), false},
		{"update another node's CSINode", attrs(nodeA, admission.Update, csiGVR, "", csiNode("node-b"), csiNode("node-b")), false},
		{"create an event as itself", attrs(nodeA, admission.Create, eventsGVR, "", coreEvent("node-a"), nil), true},
		{"create an event as another node", attrs(nodeA, admission.Create, eventsGVR, "", coreEvent("node-b"), nil), false},
		{"create an anonymous event", attrs(nodeA, admission.Create, eventsGVR, "", coreEvent(""), nil), false},
		{"aggregate own event", attrs(nodeA, admission.Update, eventsGVR, "", coreEvent("node-a"), coreEvent("node-a")), true},
		{"take over another's event", attrs(nodeA, admission.Update, eventsGVR, "", coreEvent("node-a"), coreEvent("node-b")), false},
		{"events.k8s.io event as itself", attrs(nodeA, admission.Create, newEvGVR, "", &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e"}, ReportingInstance: "node-a"}, nil), true},
		{"events.k8s.io event as the scheduler", attrs(nodeA, admission.Create, newEvGVR, "", &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e"}, ReportingInstance: "default-scheduler"}, nil), false},
		{"token bound to its own pod", attrs(nodeA, admission.Create, saGVR, "token", tokenFor("p", "Pod"), nil), true},
		{"token bound to another node's pod", attrs(nodeA, admission.Create, saGVR, "token", tokenFor("q", "Pod"), nil), false},
		{"token bound to an unknown pod", attrs(nodeA, admission.Create, saGVR, "token", tokenFor("r", "Pod"), nil), false},
		{"token bound to a secret", attrs(nodeA, admission.Create, saGVR, "token", tokenFor("p", "Secret"), nil), false},
		{"unbound token", attrs(nodeA, admission.Create, saGVR, "token", &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sa"}}, nil), false},
		{"create a service account", attrs(nodeA, admission.Create, saGVR, "", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sa"}}, nil), false},
		{"pod certificate for its own pod", attrs(nodeA, admission.Create, pcrGVR, "", podCertificateRequest("node-a", "p", nil), nil), true},
		{"pod certificate for another node's pod", attrs(nodeA, admission.Create, pcrGVR, "", podCertificateRequest("node-a", "q", nil), nil), false},
		{"pod certificate naming another node", attrs(nodeA, admission.Create, pcrGVR, "", podCertificateRequest("node-b", "q", nil), nil), false},
		{"pod certificate for another service account", attrs(nodeA, admission.Create, pcrGVR, "", podCertificateRequest("node-a", "p",
			func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountName = "admin" }), nil), false},
		{"pod certificate status", attrs(nodeA, admission.Update, pcrGVR, "status", podCertificateRequest("node-a", "p", nil), podCertificateRequest("node-a", "p", nil)), false},
		{"admin is not restricted", attrs(admin, admission.Create, podsGVR, "", pod("p", "node-a", false), nil), true},
		{"admin changes any node", attrs(admin, admission.Update, nodesGVR, "", nodeObj("node-b", withLabel("node-restriction.kubernetes.io/pool", "x")), nodeObj("node-b", nil)), true},
	}
	p := New(boundPods{"default/p": "node-a", "default/q": "node-b"}, registeredNodes{"node-a", "node-b"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !p.Handles(tc.attrs.GetOperation()) {
				t.Fatalf("plugin does not handle %s", tc.attrs.GetOperation())
			}
			err := p.Validate(context.Background(), tc.attrs, nil)
			if tc.allow && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.allow && !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want 403 Forbidden", err)
			}
		})
	}
}

func TestUnexpectedObjectIsRefused(t *testing.T) {
	a := attrs(nodeA, admission.Update, nodesGVR, "status", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, nodeObj("node-a", nil))
	if err := New(boundPods{}, registeredNodes{}).Validate(context.Background(), a, nil); !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want 403", err)
	}
}

// A request whose pod or node UID is not the one the server knows may come
// from an informer behind: it is refused with an error the agent retries,
// not a Forbidden.
func TestPodCertificateRequestWithStaleUIDsIsRetried(t *testing.T) {
	p := New(boundPods{"default/p": "node-a"}, registeredNodes{"node-a"})
	for name, change := range map[string]func(*certificatesv1.PodCertificateRequestSpec){
		"pod UID":  func(s *certificatesv1.PodCertificateRequestSpec) { s.PodUID = "old" },
		"node UID": func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeUID = "old" },
	} {
		err := p.Validate(context.Background(), attrs(nodeA, admission.Create, pcrGVR, "", podCertificateRequest("node-a", "p", change), nil), nil)
		if !apierrors.IsInternalError(err) {
			t.Errorf("stale %s: %v, want a 500 the agent retries", name, err)
		}
	}
}
