package rbac

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/berth/berth/internal/auth"
)

// escalationCheck refuses a create or update of a Role, ClusterRole,
// RoleBinding or ClusterRoleBinding that would hand out permissions its
// author does not hold, as upstream's RBAC storage does: allowed for
// system:masters; for a role, when the author may `escalate` it or already
// holds every rule in it (in its namespace, or cluster-wide for a
// ClusterRole); for a binding, when the author may `bind` the referenced
// role or already holds every rule in it.
type escalationCheck struct {
	*admission.Handler
	listers    Listers
	authorizer authorizer.Authorizer
}

// NewEscalationCheck is the admission step that prevents privilege
// escalation through RBAC writes. authz is the server's whole authorizer
// chain (asked for escalate and bind); listers give the author's rules.
func NewEscalationCheck(listers Listers, authz authorizer.Authorizer) admission.ValidationInterface {
	return &escalationCheck{Handler: admission.NewHandler(admission.Create, admission.Update), listers: listers, authorizer: authz}
}

func (c *escalationCheck) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().Group != rbacv1.GroupName || a.GetSubresource() != "" {
		return nil
	}
	u := a.GetUserInfo()
	if u == nil {
		return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(), errors.New("no user"))
	}
	if slices.Contains(u.GetGroups(), auth.MastersGroup) {
		return nil
	}
	switch obj := a.GetObject().(type) {
	case *rbacv1.Role:
		return c.checkRole(ctx, a, u, "roles", obj.Rules)
	case *rbacv1.ClusterRole:
		return c.checkClusterRole(ctx, a, u, obj)
	case *rbacv1.RoleBinding:
		return c.checkBinding(ctx, a, u, obj.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return c.checkBinding(ctx, a, u, obj.RoleRef)
	}
	return nil
}

func (c *escalationCheck) checkRole(ctx context.Context, a admission.Attributes, u user.Info, resource string, rules []rbacv1.PolicyRule) error {
	if c.allowed(ctx, u, "escalate", resource, a.GetNamespace(), a.GetName()) {
		return nil
	}
	return c.confirmHeld(a, u, rules)
}

// fullAuthority is cluster-admin's rules: what upstream requires of an
// author who sets, changes or drops an aggregationRule without escalate.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// checkClusterRole is upstream's ClusterRole storage check
// (pkg/registry/rbac/clusterrole/policybased): the rules must be held, and
// on create, or on an update where the new or the old object aggregates,
// the author must hold full authority.
func (c *escalationCheck) checkClusterRole(ctx context.Context, a admission.Attributes, u user.Info, role *rbacv1.ClusterRole) error {
	if c.allowed(ctx, u, "escalate", "clusterroles", "", a.GetName()) {
		return nil
	}
	if err := c.confirmHeld(a, u, role.Rules); err != nil {
		return err
	}
	old, _ := a.GetOldObject().(*rbacv1.ClusterRole)
	if !hasAggregationRule(role) && !hasAggregationRule(old) {
		return nil
	}
	if err := c.confirmHeld(a, u, fullAuthority); err != nil {
		return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(),
			errors.New("must have cluster-admin privileges to use the aggregationRule"))
	}
	return nil
}

func hasAggregationRule(role *rbacv1.ClusterRole) bool {
	return role != nil && role.AggregationRule != nil && len(role.AggregationRule.ClusterRoleSelectors) > 0
}

func (c *escalationCheck) checkBinding(ctx context.Context, a admission.Attributes, u user.Info, ref rbacv1.RoleRef) error {
	resource := "clusterroles"
	if ref.Kind == "Role" {
		resource = "roles"
	}
	if c.allowed(ctx, u, "bind", resource, a.GetNamespace(), ref.Name) {
		return nil
	}
	rules, ok := c.listers.roleRules(ref, a.GetNamespace())
	if !ok {
		return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(),
			fmt.Errorf("user %q cannot bind %s %q: it does not exist, and only who may bind it can refer to it", u.GetName(), ref.Kind, ref.Name))
	}
	return c.confirmHeld(a, u, rules)
}

// allowed asks the authorizer whether u may verb the named role.
func (c *escalationCheck) allowed(ctx context.Context, u user.Info, verb, resource, namespace, name string) bool {
	d, _, err := c.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: verb, APIGroup: rbacv1.GroupName, APIVersion: "v1", Resource: resource,
		Namespace: namespace, Name: name, ResourceRequest: true,
	})
	return err == nil && d == authorizer.DecisionAllow
}

// confirmHeld refuses unless u already holds every rule (in the object's
// namespace, or cluster-wide for cluster objects), naming what is missing.
func (c *escalationCheck) confirmHeld(a admission.Attributes, u user.Info, rules []rbacv1.PolicyRule) error {
	held, err := c.listers.RulesFor(u, a.GetNamespace())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	covered, missing := rbacvalidation.Covers(held, rules)
	if covered {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "user %q (groups=%q) is attempting to grant RBAC permissions not currently held:", u.GetName(), u.GetGroups())
	writeRules(&b, missing)
	return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(), errors.New(b.String()))
}

func writeRules(w io.Writer, rules []rbacv1.PolicyRule) {
	for _, r := range rules {
		fmt.Fprintf(w, "\n%s", r.String())
	}
}
