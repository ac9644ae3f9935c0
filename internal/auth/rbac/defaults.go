package rbac

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/berth/berth/internal/auth"
)

// Upstream's marker of the roles and bindings the server itself manages.
const (
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	BootstrappingValue = "rbac-defaults"
	// BootstrappersGroup is who joins with a bootstrap token.
	BootstrappersGroup = "system:bootstrappers"
)

// DefaultPolicy is the default ClusterRoles and ClusterRoleBindings the
// server creates as objects: the in-code bootstrap policy (auth.BootstrapPolicy,
// which also authorizes berth's components before any object exists) and
// the roles users expect of a Kubernetes cluster. Nodes get one binding,
// system:node-proxier to system:nodes (auth.NodeProxierBinding); for the
// rest the Node authorizer decides.
func DefaultPolicy() ([]*rbacv1.ClusterRole, []*rbacv1.ClusterRoleBinding) {
	var roles []*rbacv1.ClusterRole
	var bindings []*rbacv1.ClusterRoleBinding
	for _, b := range append(auth.BootstrapPolicy(), userFacingPolicy()...) {
		role := b.Role.DeepCopy()
		role.Labels = labels.Merge(role.Labels, defaultsLabels())
		roles = append(roles, role)
		if len(b.Users)+len(b.Groups) == 0 {
			continue
		}
		bindings = append(bindings, defaultBinding(role.Name, b.Users, b.Groups))
	}
	return roles, bindings
}

// DefaultNamespacedPolicy is the default Roles and RoleBindings: upstream's
// extension-apiserver-authentication-reader in kube-system (read of exactly
// the ConfigMap where the API server publishes its client CA), bound to
// nodes, whose agents verify with that CA who calls their node server.
func DefaultNamespacedPolicy() ([]*rbacv1.Role, []*rbacv1.RoleBinding) {
	const name = "extension-apiserver-authentication-reader"
	meta := metav1.ObjectMeta{Name: name, Namespace: auth.ClientCAConfigMapNamespace, Labels: defaultsLabels()}
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
		Verbs: readVerbs, APIGroups: core, Resources: []string{"configmaps"}, ResourceNames: []string{auth.ClientCAConfigMapName},
	}}}
	meta.Name = "berth:nodes:" + name
	binding := &rbacv1.RoleBinding{
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: auth.NodesGroup}},
	}
	return []*rbacv1.Role{role}, []*rbacv1.RoleBinding{binding}
}

func defaultsLabels() map[string]string {
	return map[string]string{BootstrappingLabel: BootstrappingValue}
}

func defaultBinding(role string, users, groups []string) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role, Labels: defaultsLabels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}
	for _, u := range users {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	for _, g := range groups {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	return b
}

func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func role(name string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

// aggregatedRole gathers the rules of the roles labelled selectLabel.
func aggregatedRole(name, selectLabel string, labels map[string]string, rules []rbacv1.PolicyRule) rbacv1.ClusterRole {
	r := role(name, rules...)
	r.Labels = labels
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{selectLabel: "true"}}}}
	return r
}

// labelledRole adds its rules to the aggregated role selecting label.
func labelledRole(name, label string, rules []rbacv1.PolicyRule) rbacv1.ClusterRole {
	r := role(name, rules...)
	r.Labels = map[string]string{label: "true"}
	return r
}

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "delete", "deletecollection", "patch", "update"}
	core       = []string{""}
	// workloadGroups are the groups of upstream's aggregated user roles
	// beyond core: listed so the roles keep their meaning as berth serves
	// more of the API.
	workloadGroups = []string{"apps", "batch", "autoscaling", "policy", "networking.k8s.io", "discovery.k8s.io"}
)

// Labels of upstream's aggregated user roles: a ClusterRole carrying one
// adds its rules to admin, edit or view (internal/controller/clusterroleaggregation).
const (
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// userFacingPolicy is upstream's cluster-admin, admin, edit and view,
// system:public-info-viewer, system:service-account-issuer-discovery and
// system:node-bootstrapper. As upstream,
// view reads no Secrets, edit adds writes and Secrets, admin adds namespace
// RBAC; and as upstream, admin, edit and view are aggregated: their rules
// come from the system:aggregate-to-* roles (view is itself aggregated into
// edit, edit into admin), so a role labelled aggregate-to-view extends all
// three. Their rules are written already aggregated, in the controller's
// order, so they grant from the first moment, before the controller runs.
func userFacingPolicy() []auth.Binding {
	view := []rbacv1.PolicyRule{
		rule(readVerbs, core, "configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
			"replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status",
			"bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
			"replicationcontrollers/status", "resourcequotas", "resourcequotas/status", "namespaces"),
		rule(readVerbs, workloadGroups, "*"),
	}
	toEdit := []rbacv1.PolicyRule{
		rule(append(slices.Clone(readVerbs), writeVerbs...), core, "pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy",
			"configmaps", "endpoints", "persistentvolumeclaims", "replicationcontrollers", "replicationcontrollers/scale",
			"secrets", "serviceaccounts", "services", "services/proxy"),
		rule([]string{"create"}, core, "pods/eviction", "serviceaccounts/token"),
		rule([]string{"impersonate"}, core, "serviceaccounts"),
		rule(writeVerbs, workloadGroups, "*"),
	}
	toAdmin := []rbacv1.PolicyRule{
		rule(append(slices.Clone(readVerbs), writeVerbs...), []string{rbacv1.GroupName}, "roles", "rolebindings"),
		rule([]string{"create"}, []string{"authorization.k8s.io"}, "localsubjectaccessreviews"),
	}
	// The aggregated roles' rules in the controller's order: the selected
	// roles' rules by role name ("edit" < "system:aggregate-to-admin";
	// "system:aggregate-to-edit" < "view").
	edit := append(slices.Clone(toEdit), view...)
	admin := append(slices.Clone(edit), toAdmin...)
	return []auth.Binding{
		{Role: role("cluster-admin",
			rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
		), Groups: []string{auth.MastersGroup}},
		// Sources before the roles that aggregate them, so that each is
		// created already equal to what the controller computes.
		{Role: labelledRole("system:aggregate-to-admin", AggregateToAdmin, toAdmin)},
		{Role: labelledRole("system:aggregate-to-edit", AggregateToEdit, toEdit)},
		{Role: labelledRole("system:aggregate-to-view", AggregateToView, view)},
		{Role: aggregatedRole("view", AggregateToView, map[string]string{AggregateToEdit: "true"}, view)},
		{Role: aggregatedRole("edit", AggregateToEdit, map[string]string{AggregateToAdmin: "true"}, edit)},
		{Role: aggregatedRole("admin", AggregateToAdmin, nil, admin)},
		{Role: role("system:public-info-viewer", rbacv1.PolicyRule{Verbs: []string{"get"},
			NonResourceURLs: []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}}),
			Groups: []string{user.AllAuthenticated, user.AllUnauthenticated}},
		// Service-account tokens' relying parties read the issuer's OIDC
		// discovery (internal/auth/serviceaccount.NewOpenIDMetadata).
		{Role: role("system:service-account-issuer-discovery", rbacv1.PolicyRule{Verbs: []string{"get"},
			NonResourceURLs: []string{"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"}}),
			Groups: []string{serviceaccount.AllServiceAccountsGroup}},
		{Role: role("system:node-bootstrapper",
			rule([]string{"create", "get", "list", "watch"}, []string{"certificates.k8s.io"}, "certificatesigningrequests"),
		), Groups: []string{BootstrappersGroup}},
	}
}
