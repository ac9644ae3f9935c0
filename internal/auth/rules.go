package auth

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// RuleLister lists the RBAC rules that apply to u in namespace (cluster-wide
// ones included): internal/auth/rbac's Listers.RulesFor.
type RuleLister func(u user.Info, namespace string) ([]rbacv1.PolicyRule, error)

// NewRuleResolver answers what a user may do in a namespace (the
// SelfSubjectRulesReview behind `kubectl auth can-i --list`) for the chain
// NewAuthorizer builds, part by part:
//   - masters: everything;
//   - the Node authorizer: a node's rights hang on objects (the pods bound to
//     it, what they reference), not on rules, so for nodes the answer is
//     incomplete, as upstream's Node authorizer says;
//   - the bootstrap policy: the rules of its bindings for the user;
//   - RBAC: rbac's rules, when given.
func NewRuleResolver(policy []Binding, rbac RuleLister) authorizer.RuleResolver {
	return ruleResolver{policy: policy, rbac: rbac}
}

type ruleResolver struct {
	policy []Binding
	rbac   RuleLister
}

var everything = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

func (r ruleResolver) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	incomplete := false
	if slices.Contains(u.GetGroups(), MastersGroup) {
		rules = append(rules, everything...)
	}
	if slices.Contains(u.GetGroups(), NodesGroup) {
		incomplete = true
		errs = append(errs, errors.New("node authorizer does not support user rule resolution"))
	}
	for _, b := range r.policy {
		if b.appliesTo(u) {
			rules = append(rules, b.Role.Rules...)
		}
	}
	if r.rbac != nil {
		held, err := r.rbac(u, namespace)
		if err != nil {
			incomplete = true
			errs = append(errs, fmt.Errorf("rbac: %w", err))
		}
		rules = append(rules, held...)
	}
	resource, nonResource := ruleInfos(unique(rules))
	return resource, nonResource, incomplete, errors.Join(errs...)
}

// unique drops repeated rules (the admin's everything comes from masters
// and again from RBAC's cluster-admin binding), keeping the first of each.
func unique(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		if !slices.ContainsFunc(out, func(o rbacv1.PolicyRule) bool { return reflect.DeepEqual(o, r) }) {
			out = append(out, r)
		}
	}
	return out
}

// ruleInfos splits RBAC rules into the authorizer's two kinds of rule.
func ruleInfos(rules []rbacv1.PolicyRule) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo) {
	var resource []authorizer.ResourceRuleInfo
	var nonResource []authorizer.NonResourceRuleInfo
	for _, rule := range rules {
		if len(rule.Resources) > 0 {
			resource = append(resource, &authorizer.DefaultResourceRuleInfo{
				Verbs: rule.Verbs, APIGroups: rule.APIGroups, Resources: rule.Resources, ResourceNames: rule.ResourceNames,
			})
		}
		if len(rule.NonResourceURLs) > 0 {
			nonResource = append(nonResource, &authorizer.DefaultNonResourceRuleInfo{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
		}
	}
	return resource, nonResource
}
