package auth

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Identities of the server's own components, as upstream names them.
const (
	SchedulerUser  = "system:kube-scheduler"
	ControllerUser = "system:kube-controller-manager"
	// CoreDNSUser is the server's in-process cluster DNS (CoreDNS), which
	// kubeadm runs as the kube-system/coredns service account.
	CoreDNSUser = "system:coredns"
	NodesGroup  = "system:nodes"
)

func rule(verbs []string, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

var (
	read      = []string{"get", "list", "watch"}
	eventVerb = []string{"create", "patch", "update"}
)

func clusterRole(name string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

// BootstrapPolicy is what berth's own components and every authenticated
// user may do, mirroring upstream's default ClusterRoles of the same names,
// trimmed to the resources berth serves. The controller manager's and the
// scheduler's bindings are upstream's roles themselves, which the server
// adds (rbac.ComponentBindings): this package is linked into the agent,
// which has no use for upstream's policy package.
func BootstrapPolicy() []Binding {
	return []Binding{
		{Role: clusterRole("system:discovery", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{
			"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/", "/healthz", "/livez", "/readyz",
		}}), Groups: []string{user.AllAuthenticated}},
		{Role: clusterRole("system:basic-user",
			rule([]string{"create"}, "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, "authentication.k8s.io", "selfsubjectreviews"),
		), Groups: []string{user.AllAuthenticated}},
		{Role: CoreDNSRole(), Users: []string{CoreDNSUser}},
		// No system:node role: nodes get what the Node authorizer
		// (internal/auth/node) grants each of them, and by group only
		// upstream's system:node-proxier, because every agent runs
		// kube-proxy's proxier as itself (internal/agent/proxy).
		NodeProxierBinding(),
	}
}

// CoreDNSRole is kubeadm's system:coredns role: what CoreDNS's kubernetes
// plugin lists and watches to answer for the cluster domain.
func CoreDNSRole() rbacv1.ClusterRole {
	return clusterRole(CoreDNSUser,
		rule([]string{"list", "watch"}, "", "endpoints", "services", "pods", "namespaces"),
		rule([]string{"list", "watch"}, "discovery.k8s.io", "endpointslices"),
	)
}

// NodeProxierBinding is upstream's system:node-proxier ClusterRole (the
// rules kube-proxy runs with: list and watch Services, EndpointSlices and
// Endpoints, read Nodes, write events) bound to every node. Upstream binds
// it to the user system:kube-proxy; berth's agents run the proxier under
// their node identity, and the Node authorizer alone does not let a node
// list EndpointSlices.
func NodeProxierBinding() Binding {
	return Binding{Role: clusterRole("system:node-proxier",
		rule([]string{"list", "watch"}, "", "services", "endpoints"),
		rule(read, "", "nodes"),
		rule(eventVerb, "", "events"), rule(eventVerb, "events.k8s.io", "events"),
		rule([]string{"list", "watch"}, "discovery.k8s.io", "endpointslices"),
	), Groups: []string{NodesGroup}}
}
