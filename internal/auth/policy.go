package auth

import (
	"context"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// Binding grants a role's rules to users and groups. It is the in-code form
// of a ClusterRoleBinding: the bootstrap policy berth needs before any RBAC
// object exists (and the seed RBAC will serve once it lands).
type Binding struct {
	Role   rbacv1.ClusterRole
	Users  []string
	Groups []string
}

// policyAuthorizer allows a request when some binding of its user covers it.
type policyAuthorizer struct{ bindings []Binding }

// NewPolicyAuthorizer authorizes against fixed bindings.
func NewPolicyAuthorizer(bindings []Binding) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(policyAuthorizer{bindings: bindings}.Authorize)
}

func (p policyAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser() == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	for _, b := range p.bindings {
		if b.appliesTo(a.GetUser()) && RulesAllow(b.Role.Rules, a) {
			return authorizer.DecisionAllow, "allowed by ClusterRole " + b.Role.Name, nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// RulesAllow reports whether rules grant the request a, by RBAC's own rule
// comparison (so the in-code policy and RBAC objects match alike).
func RulesAllow(rules []rbacv1.PolicyRule, a authorizer.Attributes) bool {
	ok, _ := rbacvalidation.Covers(rules, []rbacv1.PolicyRule{requestRule(a)})
	return ok
}

func (b Binding) appliesTo(u user.Info) bool {
	if slices.Contains(b.Users, u.GetName()) {
		return true
	}
	return slices.ContainsFunc(b.Groups, func(g string) bool { return slices.Contains(u.GetGroups(), g) })
}

// requestRule expresses one request as the narrowest rule that covers it, so
// that RBAC's own rule comparison decides.
func requestRule(a authorizer.Attributes) rbacv1.PolicyRule {
	if !a.IsResourceRequest() {
		return rbacv1.PolicyRule{Verbs: []string{a.GetVerb()}, NonResourceURLs: []string{a.GetPath()}}
	}
	resource := a.GetResource()
	if a.GetSubresource() != "" {
		resource += "/" + a.GetSubresource()
	}
	rule := rbacv1.PolicyRule{Verbs: []string{a.GetVerb()}, APIGroups: []string{a.GetAPIGroup()}, Resources: []string{resource}}
	if a.GetName() != "" {
		rule.ResourceNames = []string{a.GetName()}
	}
	return rule
}
