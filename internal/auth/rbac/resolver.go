// Package rbac authorizes requests from rbac.authorization.k8s.io/v1
// objects (Roles, ClusterRoles and their bindings), seeds the default
// roles as objects, and refuses role and binding writes that would grant
// more than their author holds (privilege escalation).
package rbac

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
)

// Listers are where the RBAC objects are read from: client-go listers,
// over informers in the server and over plain indexers in tests.
type Listers struct {
	Roles               rbaclisters.RoleLister
	RoleBindings        rbaclisters.RoleBindingLister
	ClusterRoles        rbaclisters.ClusterRoleLister
	ClusterRoleBindings rbaclisters.ClusterRoleBindingLister
}

// grant is the rules one binding gives, and how to name it in a reason.
type grant struct {
	source string
	rules  []rbacv1.PolicyRule
}

// visitRules calls visit with each binding's rules that apply to u in
// namespace (cluster-wide bindings always; the namespace's own bindings
// when namespace is set), until visit returns false. Bindings that refer
// to a missing role grant nothing.
func (l Listers) visitRules(u user.Info, namespace string, visit func(grant) bool) error {
	crbs, err := l.ClusterRoleBindings.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing clusterrolebindings: %w", err)
	}
	for _, b := range crbs {
		if !appliesTo(u, b.Subjects, "") {
			continue
		}
		rules, ok := l.roleRules(b.RoleRef, "")
		if ok && !visit(grant{source: fmt.Sprintf("ClusterRoleBinding %q of ClusterRole %q", b.Name, b.RoleRef.Name), rules: rules}) {
			return nil
		}
	}
	if namespace == "" {
		return nil
	}
	rbs, err := l.RoleBindings.RoleBindings(namespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing rolebindings in %s: %w", namespace, err)
	}
	for _, b := range rbs {
		if !appliesTo(u, b.Subjects, namespace) {
			continue
		}
		rules, ok := l.roleRules(b.RoleRef, namespace)
		if ok && !visit(grant{source: fmt.Sprintf("RoleBinding %s/%s of %s %q", namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name), rules: rules}) {
			return nil
		}
	}
	return nil
}

// RulesFor is every rule u holds in namespace ("" for cluster-wide only).
func (l Listers) RulesFor(u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	err := l.visitRules(u, namespace, func(g grant) bool {
		rules = append(rules, g.rules...)
		return true
	})
	return rules, err
}

// roleRules are the rules of the role ref points at; a Role is looked up
// in namespace (a RoleBinding's own).
func (l Listers) roleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, bool) {
	switch ref.Kind {
	case "ClusterRole":
		role, err := l.ClusterRoles.Get(ref.Name)
		if err != nil {
			return nil, false
		}
		return role.Rules, true
	case "Role":
		if namespace == "" {
			return nil, false
		}
		role, err := l.Roles.Roles(namespace).Get(ref.Name)
		if err != nil {
			return nil, false
		}
		return role.Rules, true
	}
	return nil, false
}

// appliesTo reports whether some subject names u. A ServiceAccount
// subject without a namespace means the binding's own (bindingNamespace).
func appliesTo(u user.Info, subjects []rbacv1.Subject, bindingNamespace string) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if u.GetName() == s.Name {
				return true
			}
		case rbacv1.GroupKind:
			for _, g := range u.GetGroups() {
				if g == s.Name {
					return true
				}
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns != "" && serviceaccount.MatchesUsername(ns, s.Name, u.GetName()) {
				return true
			}
		}
	}
	return false
}
