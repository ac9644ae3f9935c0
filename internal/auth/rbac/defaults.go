package rbac

import (
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"

	"github.com/berth/berth/internal/auth"
)

// Upstream's marker of the roles and bindings the server itself manages.
const (
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	BootstrappingValue = "rbac-defaults"
	// BootstrappersGroup is who joins with a bootstrap token.
	BootstrappersGroup = "system:bootstrappers"
)

// Policy is a default RBAC policy: cluster-wide roles and bindings, and
// namespaced ones by namespace.
type Policy struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	Roles               map[string][]rbacv1.Role
	RoleBindings        map[string][]rbacv1.RoleBinding
}

// DefaultPolicy is kube-apiserver's default RBAC policy (upstream's
// bootstrappolicy: its ClusterRoles, the controllers' roles, their
// bindings and the kube-system and kube-public Roles) plus what berth's
// own parts need as objects: CoreDNS's role (kubeadm's system:coredns,
// bound to the server's in-process CoreDNS), and for nodes, whose agents
// run kube-proxy's proxier and join with bootstrap tokens, the node-proxier,
// node-bootstrapper and client-CA reader bindings kubeadm makes, and the
// certificates controller's serving approver. auth.BootstrapPolicy and
// ComponentBindings, which authorize berth's components before any
// object exists, are in code only.
func DefaultPolicy() *Policy {
	p := &Policy{
		ClusterRoles:        append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...),
		ClusterRoleBindings: append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...),
		Roles:               bootstrappolicy.NamespaceRoles(),
		RoleBindings:        bootstrappolicy.NamespaceRoleBindings(),
	}
	approver, approverBinding := servingApprover()
	p.ClusterRoles = append(p.ClusterRoles, labelled(auth.CoreDNSRole()), approver)
	p.ClusterRoleBindings = append(p.ClusterRoleBindings, approverBinding)
	p.ClusterRoleBindings = append(p.ClusterRoleBindings,
		clusterBinding(auth.CoreDNSUser, auth.CoreDNSUser, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: auth.CoreDNSUser}),
		clusterBinding("berth:nodes:node-proxier", "system:node-proxier", nodes),
		clusterBinding("berth:node-bootstrapper", "system:node-bootstrapper",
			rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: BootstrappersGroup}))
	const reader = "extension-apiserver-authentication-reader"
	p.RoleBindings = cloneRoleBindings(p.RoleBindings)
	p.RoleBindings[auth.ClientCAConfigMapNamespace] = append(p.RoleBindings[auth.ClientCAConfigMapNamespace], rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "berth:nodes:" + reader, Namespace: auth.ClientCAConfigMapNamespace, Labels: defaultsLabels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: reader},
		Subjects:   []rbacv1.Subject{nodes},
	})
	return p
}

// nodes is every node's group: what the Node authorizer does not grant
// them, these bindings do.
var nodes = rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: auth.NodesGroup}

func labelled(r rbacv1.ClusterRole) rbacv1.ClusterRole {
	r.Labels = defaultsLabels()
	return r
}

func defaultsLabels() map[string]string {
	return map[string]string{BootstrappingLabel: BootstrappingValue}
}

func clusterBinding(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: defaultsLabels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

// cloneRoleBindings copies the map so that appending to one namespace's
// list leaves upstream's untouched.
func cloneRoleBindings(in map[string][]rbacv1.RoleBinding) map[string][]rbacv1.RoleBinding {
	out := make(map[string][]rbacv1.RoleBinding, len(in))
	for ns, bindings := range in {
		out[ns] = append([]rbacv1.RoleBinding(nil), bindings...)
	}
	return out
}

// aggregatedDefaults are the default roles with an aggregationRule (admin,
// edit, view), their rules already filled from the default roles their
// selectors match, in the order upstream's clusterrole-aggregation
// controller writes them (matched roles by name, each rule once); chained
// aggregation (view into edit into admin) settles in as many passes as the
// chain is long. The controller's own code is unexported, hence this copy.
// They come in creation order, each after the aggregated roles it selects:
// the controller recomputes a role as soon as it appears, and one created
// before its sources would lose their rules until they appear too.
func aggregatedDefaults(roles []rbacv1.ClusterRole) []rbacv1.ClusterRole {
	roles = slices.Clone(roles)
	slices.SortFunc(roles, func(a, b rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	for range roles {
		changed := false
		for i := range roles {
			if roles[i].AggregationRule == nil {
				continue
			}
			if rules := aggregate(roles, roles[i]); !equality.Semantic.DeepEqual(rules, roles[i].Rules) {
				roles[i].Rules, changed = rules, true
			}
		}
		if !changed {
			break
		}
	}
	return inAggregationOrder(roles)
}

// inAggregationOrder is the aggregated roles among roles, each after the
// aggregated roles its selectors match. A cycle, which upstream's policy
// does not have, keeps the rest in name order.
func inAggregationOrder(roles []rbacv1.ClusterRole) []rbacv1.ClusterRole {
	pending := slices.DeleteFunc(slices.Clone(roles), func(r rbacv1.ClusterRole) bool { return r.AggregationRule == nil })
	ordered := make([]rbacv1.ClusterRole, 0, len(pending))
	for len(pending) > 0 {
		ready := slices.IndexFunc(pending, func(r rbacv1.ClusterRole) bool {
			return !slices.ContainsFunc(pending, func(source rbacv1.ClusterRole) bool {
				return source.Name != r.Name && selects(r, source)
			})
		})
		if ready < 0 {
			return append(ordered, pending...)
		}
		ordered = append(ordered, pending[ready])
		pending = slices.Delete(pending, ready, ready+1)
	}
	return ordered
}

// selects reports whether one of role's aggregation selectors matches source.
func selects(role, source rbacv1.ClusterRole) bool {
	for i := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err == nil && selector.Matches(labels.Set(source.Labels)) {
			return true
		}
	}
	return false
}

// aggregate is the rules of the roles (sorted by name) that role's
// selectors match.
func aggregate(roles []rbacv1.ClusterRole, role rbacv1.ClusterRole) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			continue // upstream's selectors are valid
		}
		for _, r := range roles {
			if r.Name == role.Name || !selector.Matches(labels.Set(r.Labels)) {
				continue
			}
			for _, rule := range r.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, rule) }) {
					rules = append(rules, rule)
				}
			}
		}
	}
	return rules
}

// CertificateControllerAccount is the kube-system service account berth's
// certificates controller decides and issues as: upstream's approving and
// signing controllers' (system:controller:certificate-controller).
const CertificateControllerAccount = "certificate-controller"

// servingApprover is what berth's certificates controller needs beyond
// upstream's certificate-controller role: it also decides kubelet serving
// CSRs, which upstream leaves to an operator.
func servingApprover() (rbacv1.ClusterRole, rbacv1.ClusterRoleBinding) {
	const name = "berth:certificate-controller:kubelet-serving-approver"
	role := labelled(rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		Verbs: []string{"approve"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"},
		ResourceNames: []string{certificatesv1.KubeletServingSignerName},
	}}})
	return role, clusterBinding(name, name, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: metav1.NamespaceSystem, Name: CertificateControllerAccount})
}

// ComponentBindings bind upstream's own roles, in code, to the identities
// of the server's control loops, so that their informers list and watch
// from the first request on, before any RBAC object exists:
// system:kube-controller-manager to the controller manager, and
// system:kube-scheduler and system:volume-scheduler to the scheduler. The
// Leases they elect under (kube-system/berth-<component>) they hold, as
// upstream, through the stored Roles
// system::leader-locking-kube-controller-manager and
// system::leader-locking-kube-scheduler.
func ComponentBindings() []auth.Binding {
	return []auth.Binding{
		upstreamClusterRole(auth.ControllerUser, auth.ControllerUser),
		upstreamClusterRole("system:kube-scheduler", auth.SchedulerUser),
		upstreamClusterRole("system:volume-scheduler", auth.SchedulerUser),
	}
}

// upstreamClusterRole binds user to bootstrappolicy's ClusterRole name.
func upstreamClusterRole(name, user string) auth.Binding {
	for _, r := range bootstrappolicy.ClusterRoles() {
		if r.Name == name {
			return auth.Binding{Role: r, Users: []string{user}}
		}
	}
	panic("bootstrappolicy has no ClusterRole " + name)
}
