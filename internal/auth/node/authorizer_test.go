package node

import (
	"context"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func nodeUser(name string) user.Info {
	return &user.DefaultInfo{Name: UserPrefix + name, Groups: []string{user.NodesGroup, user.AllAuthenticated}}
}

// podOn is a pod bound to node that references one object of each kind.
func podOn(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{
			NodeName:           node,
			ServiceAccountName: name + "-sa",
			Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name + "-secret"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-cm"}}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-pvc"}}},
			},
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
}

func syncedGraph() *Graph {
	g := NewGraph()
	g.SetPod(podOn("pod-a", "node-a"))
	g.SetPod(podOn("pod-b", "node-b"))
	g.SetPod(podOn("pending", ""))
	g.SetCSR(&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-a"}, Spec: certificatesv1.CertificateSigningRequestSpec{Username: UserPrefix + "node-a"}})
	g.SetCSR(&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-b"}, Spec: certificatesv1.CertificateSigningRequestSpec{Username: UserPrefix + "node-b"}})
	g.MarkSynced()
	return g
}

// req builds the attributes of one resource request by u.
func req(u user.Info, verb, group, resource, sub, ns, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
}

func withFields(a authorizer.AttributesRecord, selector string) authorizer.AttributesRecord {
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		a.FieldSelectorParsingErr = err
		return a
	}
	a.FieldSelectorRequirements = sel.Requirements()
	return a
}

func TestAuthorizerDecisions(t *testing.T) {
	t.Parallel()
	a := NewAuthorizer(syncedGraph())
	nodeA := nodeUser("node-a")
	lease := corev1.NamespaceNodeLease
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"list own pods by field selector", withFields(req(nodeA, "list", "", "pods", "", "", ""), "spec.nodeName=node-a"), true},
		{"watch own pods with == and another requirement", withFields(req(nodeA, "watch", "", "pods", "", "default", ""), "status.phase!=Failed,spec.nodeName==node-a"), true},
		{"list all pods", req(nodeA, "list", "", "pods", "", "", ""), false},
		{"watch all pods", req(nodeA, "watch", "", "pods", "", "", ""), false},
		{"watch another node's pods", withFields(req(nodeA, "watch", "", "pods", "", "", ""), "spec.nodeName=node-b"), false},
		{"list pods not on own node", withFields(req(nodeA, "list", "", "pods", "", "", ""), "spec.nodeName!=node-a"), false},
		{"unparsable field selector", withFields(req(nodeA, "list", "", "pods", "", "", ""), "spec.nodeName"), false},
		{"get own pod", req(nodeA, "get", "", "pods", "", "default", "pod-a"), true},
		{"get another node's pod", req(nodeA, "get", "", "pods", "", "default", "pod-b"), false},
		{"get an unbound pod", req(nodeA, "get", "", "pods", "", "default", "pending"), false},
		{"update own pod's status", req(nodeA, "update", "", "pods", "status", "default", "pod-a"), true},
		{"patch own pod's status", req(nodeA, "patch", "", "pods", "status", "default", "pod-a"), true},
		{"patch another node's pod status", req(nodeA, "patch", "", "pods", "status", "default", "pod-b"), false},
		{"resize own pod (a node writes its pods' status, never their spec)", req(nodeA, "patch", "", "pods", "resize", "default", "pod-a"), false},
		{"delete own pod", req(nodeA, "delete", "", "pods", "", "default", "pod-a"), true},
		{"delete another node's pod", req(nodeA, "delete", "", "pods", "", "default", "pod-b"), false},
		{"patch own pod's spec", req(nodeA, "patch", "", "pods", "", "default", "pod-a"), false},
		{"create a pod", req(nodeA, "create", "", "pods", "", "default", ""), false},
		{"bind a pod", req(nodeA, "create", "", "pods", "binding", "default", "pending"), false},
		{"evict own pod", req(nodeA, "create", "", "pods", "eviction", "default", "pod-a"), false},
		{"read own pod's log", req(nodeA, "get", "", "pods", "log", "default", "pod-a"), false},
		{"exec into own pod", req(nodeA, "create", "", "pods", "exec", "default", "pod-a"), false},
		{"deletecollection pods", withFields(req(nodeA, "deletecollection", "", "pods", "", "default", ""), "spec.nodeName=node-a"), false},
		{"read referenced secret", req(nodeA, "get", "", "secrets", "", "default", "pod-a-secret"), true},
		{"watch referenced configmap by name", req(nodeA, "watch", "", "configmaps", "", "default", "pod-a-cm"), true},
		{"read referenced service account", req(nodeA, "get", "", "serviceaccounts", "", "default", "pod-a-sa"), true},
		{"read referenced claim", req(nodeA, "get", "", "persistentvolumeclaims", "", "default", "pod-a-pvc"), true},
		{"read another node's secret", req(nodeA, "get", "", "secrets", "", "default", "pod-b-secret"), false},
		{"read secret of same name elsewhere", req(nodeA, "get", "", "secrets", "", "kube-system", "pod-a-secret"), false},
		{"read a secret as a configmap", req(nodeA, "get", "", "configmaps", "", "default", "pod-a-secret"), false},
		{"list secrets", req(nodeA, "list", "", "secrets", "", "default", ""), false},
		{"update referenced secret", req(nodeA, "update", "", "secrets", "", "default", "pod-a-secret"), false},
		{"create a token for its pod's service account", req(nodeA, "create", "", "serviceaccounts", "token", "default", "pod-a-sa"), true},
		{"create a token for another node's pod's service account", req(nodeA, "create", "", "serviceaccounts", "token", "default", "pod-b-sa"), false},
		{"get a token subresource", req(nodeA, "get", "", "serviceaccounts", "token", "default", "pod-a-sa"), false},
		{"register itself", req(nodeA, "create", "", "nodes", "", "", ""), true},
		{"get own node", req(nodeA, "get", "", "nodes", "", "", "node-a"), true},
		{"watch own node by name", req(nodeA, "watch", "", "nodes", "", "", "node-a"), true},
		{"update own status", req(nodeA, "update", "", "nodes", "status", "", "node-a"), true},
		{"patch own node", req(nodeA, "patch", "", "nodes", "", "", "node-a"), true},
		{"get another node", req(nodeA, "get", "", "nodes", "", "", "node-b"), true},
		{"list nodes", req(nodeA, "list", "", "nodes", "", "", ""), true},
		{"watch nodes", req(nodeA, "watch", "", "nodes", "", "", ""), true},
		{"patch another node", req(nodeA, "patch", "", "nodes", "", "", "node-b"), false},
		{"update another node's status", req(nodeA, "update", "", "nodes", "status", "", "node-b"), false},
		{"delete another node", req(nodeA, "delete", "", "nodes", "", "", "node-b"), false},
		{"delete itself", req(nodeA, "delete", "", "nodes", "", "", "node-a"), false},
		{"create its lease", req(nodeA, "create", "coordination.k8s.io", "leases", "", lease, ""), true},
		{"update own lease", req(nodeA, "update", "coordination.k8s.io", "leases", "", lease, "node-a"), true},
		{"get own lease", req(nodeA, "get", "coordination.k8s.io", "leases", "", lease, "node-a"), true},
		{"update another node's lease", req(nodeA, "update", "coordination.k8s.io", "leases", "", lease, "node-b"), false},
		{"create a lease elsewhere", req(nodeA, "create", "coordination.k8s.io", "leases", "", "kube-system", ""), false},
		{"delete own lease", req(nodeA, "delete", "coordination.k8s.io", "leases", "", lease, "node-a"), false},
		{"create an event", req(nodeA, "create", "", "events", "", "default", ""), true},
		{"patch an event", req(nodeA, "patch", "events.k8s.io", "events", "", "default", "e"), true},
		{"list events", req(nodeA, "list", "", "events", "", "default", ""), false},
		{"create a CSR", req(nodeA, "create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), true},
		{"get own CSR", req(nodeA, "get", "certificates.k8s.io", "certificatesigningrequests", "", "", "csr-a"), true},
		{"get another node's CSR", req(nodeA, "get", "certificates.k8s.io", "certificatesigningrequests", "", "", "csr-b"), false},
		{"list CSRs", req(nodeA, "list", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), false},
		{"approve own CSR", req(nodeA, "update", "certificates.k8s.io", "certificatesigningrequests", "approval", "", "csr-a"), false},
		{"read namespaces", req(nodeA, "get", "", "namespaces", "", "", "default"), false},
		{"list services everywhere", req(nodeA, "list", "", "services", "", "", ""), true},
		{"watch services", req(nodeA, "watch", "", "services", "", "", ""), true},
		{"update a service", req(nodeA, "update", "", "services", "", "default", "web"), false},
		{"update a service's status", req(nodeA, "update", "", "services", "status", "default", "web"), false},
		{"proxy to a service", req(nodeA, "get", "", "services", "proxy", "default", "web"), false},
		{"get a runtimeclass", req(nodeA, "get", "node.k8s.io", "runtimeclasses", "", "", "gvisor"), true},
		{"list runtimeclasses", req(nodeA, "list", "node.k8s.io", "runtimeclasses", "", "", ""), true},
		{"watch runtimeclasses", req(nodeA, "watch", "node.k8s.io", "runtimeclasses", "", "", ""), true},
		{"create a runtimeclass", req(nodeA, "create", "node.k8s.io", "runtimeclasses", "", "", ""), false},
		{"delete a runtimeclass", req(nodeA, "delete", "node.k8s.io", "runtimeclasses", "", "", "gvisor"), false},
		{"list clustertrustbundles", req(nodeA, "list", "certificates.k8s.io", "clustertrustbundles", "", "", ""), true},
		{"watch clustertrustbundles", req(nodeA, "watch", "certificates.k8s.io", "clustertrustbundles", "", "", ""), true},
		{"create a clustertrustbundle", req(nodeA, "create", "certificates.k8s.io", "clustertrustbundles", "", "", ""), false},
		{"create a podcertificaterequest", req(nodeA, "create", "certificates.k8s.io", "podcertificaterequests", "", "default", ""), true},
		{"update a podcertificaterequest's status", req(nodeA, "update", "certificates.k8s.io", "podcertificaterequests", "status", "default", "r"), false},
		{"get a podcertificaterequest", req(nodeA, "get", "certificates.k8s.io", "podcertificaterequests", "", "default", "r"), false},
		{"watch own podcertificaterequests", withFields(req(nodeA, "watch", "certificates.k8s.io", "podcertificaterequests", "", "", ""), "spec.nodeName=node-a"), true},
		{"list another node's podcertificaterequests", withFields(req(nodeA, "list", "certificates.k8s.io", "podcertificaterequests", "", "", ""), "spec.nodeName=node-b"), false},
		{"list every podcertificaterequest", req(nodeA, "list", "certificates.k8s.io", "podcertificaterequests", "", "", ""), false},
		// What a kubelet asks besides, judged as upstream's Node authorizer does.
		{"create own CSINode", req(nodeA, "create", "storage.k8s.io", "csinodes", "", "", "node-a"), true},
		{"create a CSINode, named only in its body", req(nodeA, "create", "storage.k8s.io", "csinodes", "", "", ""), true},
		{"update own CSINode", req(nodeA, "update", "storage.k8s.io", "csinodes", "", "", "node-a"), true},
		{"get another node's CSINode", req(nodeA, "get", "storage.k8s.io", "csinodes", "", "", "node-b"), false},
		{"list CSINodes", req(nodeA, "list", "storage.k8s.io", "csinodes", "", "", ""), false},
		{"watch CSIDrivers (system:node rules)", req(nodeA, "watch", "storage.k8s.io", "csidrivers", "", "", ""), true},
		{"create a TokenReview (system:node rules)", req(nodeA, "create", "authentication.k8s.io", "tokenreviews", "", "", ""), true},
		{"create a SubjectAccessReview (system:node rules)", req(nodeA, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""), true},
		{"get endpoints (system:node rules)", req(nodeA, "get", "", "endpoints", "", "default", "kubernetes"), true},
		{"delete a CSIDriver", req(nodeA, "delete", "storage.k8s.io", "csidrivers", "", "", "d"), false},
		{"get any persistent volume (graph-scoped upstream)", req(nodeA, "get", "", "persistentvolumes", "", "", "pv"), false},
		{"get any volume attachment (graph-scoped upstream)", req(nodeA, "get", "storage.k8s.io", "volumeattachments", "", "", "va"), false},
		{"get any resource claim (graph-scoped upstream)", req(nodeA, "get", "resource.k8s.io", "resourceclaims", "", "default", "c"), false},
		{"delete own resourceslices", withFields(req(nodeA, "deletecollection", "resource.k8s.io", "resourceslices", "", "", ""), "spec.nodeName=node-a"), true},
		{"watch own resourceslices", withFields(req(nodeA, "watch", "resource.k8s.io", "resourceslices", "", "", ""), "spec.nodeName=node-a"), true},
		{"delete another node's resourceslices", withFields(req(nodeA, "deletecollection", "resource.k8s.io", "resourceslices", "", "", ""), "spec.nodeName=node-b"), false},
		{"delete every resourceslice", req(nodeA, "deletecollection", "resource.k8s.io", "resourceslices", "", "", ""), false},
		{"non-resource path", authorizer.AttributesRecord{User: nodeA, Verb: "get", Path: "/api"}, false},
		{"not a node: user named like one without the group", req(&user.DefaultInfo{Name: UserPrefix + "node-a"}, "get", "", "pods", "", "default", "pod-a"), false},
		{"not a node: group without the name", req(&user.DefaultInfo{Name: "bob", Groups: []string{user.NodesGroup}}, "get", "", "nodes", "", "", "bob"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got := d == authorizer.DecisionAllow; got != tc.allow {
				t.Fatalf("allowed = %v (%q), want %v", got, reason, tc.allow)
			}
			if d == authorizer.DecisionDeny {
				t.Fatalf("the node authorizer must not deny outright (later authorizers may allow): %q", reason)
			}
			if !tc.allow && tc.attrs.IsResourceRequest() && tc.attrs.GetUser() == nodeA && reason == "" {
				t.Error("a refusal of a node gives no reason")
			}
		})
	}
}

func TestAuthorizerRefusesGraphReadsUntilSynced(t *testing.T) {
	t.Parallel()
	g := NewGraph()
	g.SetPod(podOn("pod-a", "node-a"))
	a := NewAuthorizer(g)
	nodeA := nodeUser("node-a")
	for _, attrs := range []authorizer.AttributesRecord{
		req(nodeA, "get", "", "pods", "", "default", "pod-a"),
		req(nodeA, "get", "", "secrets", "", "default", "pod-a-secret"),
	} {
		if d, _, _ := a.Authorize(context.Background(), attrs); d == authorizer.DecisionAllow {
			t.Errorf("%s %s allowed before the graph synced", attrs.Verb, attrs.Resource)
		}
	}
	g.MarkSynced()
	if d, reason, _ := a.Authorize(context.Background(), req(nodeA, "get", "", "secrets", "", "default", "pod-a-secret")); d != authorizer.DecisionAllow {
		t.Errorf("after sync: %q", reason)
	}
}
