package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Authorizer allows a node what upstream's Node authorizer allows a
// kubelet, or less: its own cases scope what a node reads and writes to
// the node, and every other resource is judged by upstream's system:node
// rules, as upstream's are. It has no opinion on anything else (nor on
// anyone who is not a node), so that the union's default deny answers
// with its reason. What a node may write is further
// checked against the stored objects by NodeRestriction admission
// (internal/admission/noderestriction): the authorizer sees no bodies.
type Authorizer struct {
	graph *Graph
}

// NewAuthorizer returns the Node authorizer over graph.
func NewAuthorizer(graph *Graph) authorizer.Authorizer {
	return authorizer.AuthorizerFunc((&Authorizer{graph: graph}).Authorize)
}

// request is one node's resource request being decided.
type request struct {
	node  string
	attrs authorizer.Attributes
}

func allow() (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// noOpinion answers with why the node authorizer did not allow a request;
// the reason reaches the 403's message (the union prefixes it with the
// authorizer's name, "node: ").
func noOpinion(format string, args ...any) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, fmt.Sprintf(format, args...), nil
}

// Authorize implements authorizer.Authorizer.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	name, ok := Name(attrs.GetUser())
	if !ok || !attrs.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	r := request{node: name, attrs: attrs}
	switch attrs.GetAPIGroup() + "/" + attrs.GetResource() {
	case "/pods":
		return a.pods(r)
	case "/nodes":
		return ownNode(r)
	case "/serviceaccounts":
		if attrs.GetSubresource() == "token" {
			return a.serviceAccountToken(r)
		}
		return a.referenced(r, serviceAccountKind)
	case "/secrets", "/configmaps", "/persistentvolumeclaims":
		return a.referenced(r, kind(attrs.GetResource()))
	case "/services":
		return readServices(r)
	case "node.k8s.io/runtimeclasses", "certificates.k8s.io/clustertrustbundles":
		return readAll(r)
	case "coordination.k8s.io/leases":
		return ownLease(r)
	case "/events", "events.k8s.io/events":
		return events(r)
	case "certificates.k8s.io/certificatesigningrequests":
		return a.csrs(r)
	case "certificates.k8s.io/podcertificaterequests":
		return podCertificateRequests(r)
	case "storage.k8s.io/csinodes":
		return ownCSINode(r)
	case "resource.k8s.io/resourceslices":
		return ownResourceSlices(r)
	}
	if byNodeRules(attrs, nodeRules) {
		return allow()
	}
	return noOpinion("nodes may not %s %s", attrs.GetVerb(), resourceName(attrs))
}

func resourceName(attrs authorizer.Attributes) string {
	if attrs.GetSubresource() != "" {
		return attrs.GetResource() + "/" + attrs.GetSubresource()
	}
	return attrs.GetResource()
}

// pods: list and watch of the node's own pods (by field selector); get,
// delete and status updates of pods bound to it.
func (a *Authorizer) pods(r request) (authorizer.Decision, string, error) {
	attrs := r.attrs
	verb, sub := attrs.GetVerb(), attrs.GetSubresource()
	switch {
	case sub == "" && (verb == "list" || verb == "watch"):
		if selectsNode(attrs, r.node) {
			return allow()
		}
		return noOpinion("node %q may %s pods only with fieldSelector spec.nodeName=%s", r.node, verb, r.node)
	case sub == "" && (verb == "get" || verb == "delete"), sub == "status" && (verb == "get" || verb == "update" || verb == "patch"):
		if !a.graph.Synced() {
			return noOpinion("pod bindings are not known yet (graph not synced); retry")
		}
		if a.graph.PodBoundTo(attrs.GetNamespace(), attrs.GetName(), r.node) {
			return allow()
		}
		return noOpinion("pod %s/%s is not bound to node %q", attrs.GetNamespace(), attrs.GetName(), r.node)
	}
	return noOpinion("nodes may not %s %s", verb, resourceName(attrs))
}

// selectsNode reports whether the request's field selector requires
// spec.nodeName=node. Other requirements only narrow the result further.
func selectsNode(attrs authorizer.Attributes, node string) bool {
	reqs, err := attrs.GetFieldSelector()
	if err != nil {
		return false
	}
	for _, req := range reqs {
		if req.Field == "spec.nodeName" && (req.Operator == selection.Equals || req.Operator == selection.DoubleEquals) && req.Value == node {
			return true
		}
	}
	return false
}

// ownNode: create (the name is checked by admission, as the authorizer
// sees no body), update and patch of the node's own Node and its status.
// Every node may read (get, list, watch) all Nodes, as upstream's
// system:node role allows: the agent routes to the other nodes' podCIDRs
// through their addresses (host-gw, internal/agent/podnet).
func ownNode(r request) (authorizer.Decision, string, error) {
	attrs := r.attrs
	verb, sub := attrs.GetVerb(), attrs.GetSubresource()
	if sub == "" && (verb == "create" || verb == "get" || verb == "list" || verb == "watch") {
		return allow()
	}
	if attrs.GetName() != r.node {
		return noOpinion("node %q may only access its own Node object", r.node)
	}
	switch {
	case sub == "" && (verb == "get" || verb == "list" || verb == "watch" || verb == "update" || verb == "patch"),
		sub == "status" && (verb == "get" || verb == "update" || verb == "patch"):
		return allow()
	}
	return noOpinion("nodes may not %s %s", verb, resourceName(attrs))
}

// referenced: get, and list/watch of a single object (fieldSelector
// metadata.name), of the objects the node's own pods reference.
func (a *Authorizer) referenced(r request, k kind) (authorizer.Decision, string, error) {
	attrs := r.attrs
	switch verb := attrs.GetVerb(); {
	case attrs.GetSubresource() != "", verb != "get" && verb != "list" && verb != "watch":
		return noOpinion("nodes may not %s %s", verb, resourceName(attrs))
	case attrs.GetName() == "" || attrs.GetNamespace() == "":
		return noOpinion("node %q may only read single %s by namespace and name", r.node, k)
	case !a.graph.Synced():
		return noOpinion("references of pods are not known yet (graph not synced); retry")
	case !a.graph.Referenced(r.node, k, attrs.GetNamespace(), attrs.GetName()):
		return noOpinion("no pod bound to node %q references %s %s/%s", r.node, k, attrs.GetNamespace(), attrs.GetName())
	}
	return allow()
}

// serviceAccountToken: create a token (TokenRequest) for a service account
// one of the node's pods runs as; NodeRestriction requires the token to be
// bound to such a pod, so it dies with the pod.
func (a *Authorizer) serviceAccountToken(r request) (authorizer.Decision, string, error) {
	attrs := r.attrs
	switch {
	case attrs.GetVerb() != "create":
		return noOpinion("nodes may not %s serviceaccounts/token", attrs.GetVerb())
	case !a.graph.Synced():
		return noOpinion("references of pods are not known yet (graph not synced); retry")
	case !a.graph.Referenced(r.node, serviceAccountKind, attrs.GetNamespace(), attrs.GetName()):
		return noOpinion("no pod bound to node %q runs as service account %s/%s", r.node, attrs.GetNamespace(), attrs.GetName())
	}
	return allow()
}

// readServices: get, list and watch of every Service, as upstream's
// system:node role grants: the agent gives each container the service
// environment variables of its namespace and of default/kubernetes.
func readServices(r request) (authorizer.Decision, string, error) {
	switch r.attrs.GetVerb() {
	case "get", "list", "watch":
		if r.attrs.GetSubresource() == "" {
			return allow()
		}
	}
	return noOpinion("nodes may only read services")
}

// readAll: get, list and watch of every object of a kind every node may
// read, as upstream's node rules allow: RuntimeClasses (the agent resolves
// pods' runtime handlers from them) and ClusterTrustBundles (projected
// into pods' volumes by signer and labels).
func readAll(r request) (authorizer.Decision, string, error) {
	switch r.attrs.GetVerb() {
	case "get", "list", "watch":
		if r.attrs.GetSubresource() == "" {
			return allow()
		}
	}
	return noOpinion("nodes may only read %s", r.attrs.GetResource())
}

// podCertificateRequests: create (NodeRestriction checks that the request
// is for one of the node's pods, as it is), and list and watch of the
// requests naming the node (by field selector), which the agent follows
// until a signer issues them.
func podCertificateRequests(r request) (authorizer.Decision, string, error) {
	attrs := r.attrs
	switch verb := attrs.GetVerb(); {
	case attrs.GetSubresource() != "":
	case verb == "create":
		return allow()
	case verb == "list" || verb == "watch":
		if selectsNode(attrs, r.node) {
			return allow()
		}
		return noOpinion("node %q may %s podcertificaterequests only with fieldSelector spec.nodeName=%s", r.node, verb, r.node)
	}
	return noOpinion("nodes may only create, list and watch podcertificaterequests")
}

// ownLease: create (name checked by admission), get, update and patch of
// the node's own Lease in kube-node-lease.
func ownLease(r request) (authorizer.Decision, string, error) {
	attrs := r.attrs
	if attrs.GetNamespace() != corev1.NamespaceNodeLease || attrs.GetSubresource() != "" {
		return noOpinion("node %q may only access its own Lease in %s", r.node, corev1.NamespaceNodeLease)
	}
	switch verb := attrs.GetVerb(); {
	case verb == "create":
		return allow()
	case attrs.GetName() != r.node:
		return noOpinion("node %q may only access its own Lease in %s", r.node, corev1.NamespaceNodeLease)
	case verb == "get" || verb == "update" || verb == "patch":
		return allow()
	}
	return noOpinion("nodes may not %s leases", attrs.GetVerb())
}

// events: create, and update/patch (client-go's recorder aggregates
// repeats by patching its own events); admission checks the reporter.
func events(r request) (authorizer.Decision, string, error) {
	switch r.attrs.GetVerb() {
	case "create", "update", "patch":
		if r.attrs.GetSubresource() == "" {
			return allow()
		}
	}
	return noOpinion("nodes may only create, update and patch events")
}

// csrs: create, and get/list/watch (by name) of the node's own requests.
func (a *Authorizer) csrs(r request) (authorizer.Decision, string, error) {
	attrs := r.attrs
	verb, sub := attrs.GetVerb(), attrs.GetSubresource()
	switch {
	case sub == "" && verb == "create":
		return allow()
	case sub != "" || (verb != "get" && verb != "list" && verb != "watch"):
		return noOpinion("nodes may not %s %s", verb, resourceName(attrs))
	case attrs.GetName() == "":
		return noOpinion("node %q may only read its own CertificateSigningRequests by name", r.node)
	case !a.graph.Synced():
		return noOpinion("requesters of CSRs are not known yet (graph not synced); retry")
	case !a.graph.CSRRequestedBy(attrs.GetName(), attrs.GetUser().GetName()):
		return noOpinion("CertificateSigningRequest %s was not requested by node %q", attrs.GetName(), r.node)
	}
	return allow()
}
