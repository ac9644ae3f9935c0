package node

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// nodeRules are upstream's system:node rules. Like upstream's Node
// authorizer, this one judges by them every request it has no case of its
// own for (a kubelet's TokenReviews and SubjectAccessReviews, CSIDrivers,
// endpoints, evictions, ...).
var nodeRules = bootstrappolicy.NodeRules()

// graphScoped are what upstream's Node authorizer allows only for objects
// its graph ties to the node, while nodeRules grant them outright: here
// they never fall through to the rules, so no node reads another's.
var graphScoped = map[string]bool{
	"/persistentvolumes":                         true,
	"storage.k8s.io/volumeattachments":           true,
	"resource.k8s.io/resourceclaims":             true,
	"resource.k8s.io/resourceslices":             true,
	"/persistentvolumeclaims":                    true,
	"certificates.k8s.io/podcertificaterequests": true,
}

// byNodeRules allows what upstream's system:node rules allow, for
// resources neither authorizer scopes to the node.
func byNodeRules(attrs authorizer.Attributes, rules []rbacv1.PolicyRule) bool {
	if graphScoped[attrs.GetAPIGroup()+"/"+attrs.GetResource()] {
		return false
	}
	return rbac.RulesAllow(attrs, rules...)
}

// ownCSINode: the node's own CSINode, which a kubelet creates and keeps
// (its name is the node's), as upstream's Node authorizer allows. A create
// names its object only in the body, which NodeRestriction checks.
func ownCSINode(r request) (authorizer.Decision, string, error) {
	attrs := r.attrs
	switch attrs.GetVerb() {
	case "get", "create", "update", "patch", "delete":
		if attrs.GetSubresource() == "" && (attrs.GetVerb() == "create" || attrs.GetName() == r.node) {
			return allow()
		}
	}
	return noOpinion("node %q may only get, create, update, patch and delete its own CSINode", r.node)
}

// ownResourceSlices: list, watch and deletecollection of the
// ResourceSlices naming the node (by field selector), as upstream's Node
// authorizer allows: a kubelet removes its node's slices when it starts.
// Single slices need the graph upstream keeps of them, which berth has
// not: those requests are refused (stricter than upstream).
func ownResourceSlices(r request) (authorizer.Decision, string, error) {
	attrs := r.attrs
	switch attrs.GetVerb() {
	case "list", "watch", "deletecollection":
		if attrs.GetSubresource() == "" && selectsNode(attrs, r.node) {
			return allow()
		}
	}
	return noOpinion("node %q may only list, watch and deletecollection resourceslices with fieldSelector spec.nodeName=%s", r.node, r.node)
}
