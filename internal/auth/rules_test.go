package auth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestRuleResolver(t *testing.T) {
	podReader := func(user.Info, string) ([]rbacv1.PolicyRule, error) {
		return []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}, nil
	}
	broken := func(user.Info, string) ([]rbacv1.PolicyRule, error) { return nil, errors.New("cache not synced") }
	authenticated := []string{user.AllAuthenticated}
	cases := []struct {
		name           string
		rbac           RuleLister
		user           user.Info
		wantResource   string // a "verb resource" that must be listed
		wantIncomplete bool
		wantErr        string
	}{
		{"an admin holds everything", nil, &user.DefaultInfo{Name: "admin", Groups: []string{MastersGroup}}, "* *", false, ""},
		{"a user gets RBAC's rules", podReader, &user.DefaultInfo{Name: "alice", Groups: authenticated}, "list pods", false, ""},
		{"and the bootstrap policy's", podReader, &user.DefaultInfo{Name: "alice", Groups: authenticated}, "create selfsubjectrulesreviews", false, ""},
		{"a component gets its in-code role", nil, &user.DefaultInfo{Name: CoreDNSUser, Groups: authenticated}, "watch endpointslices", false, ""},
		{"a node's list is incomplete", podReader, &user.DefaultInfo{Name: "system:node:n1", Groups: []string{NodesGroup}}, "list pods", true, "node authorizer"},
		{"an RBAC failure makes it incomplete", broken, &user.DefaultInfo{Name: "alice", Groups: authenticated}, "create selfsubjectaccessreviews", true, "cache not synced"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource, _, incomplete, err := NewRuleResolver(BootstrapPolicy(), tc.rbac).RulesFor(context.Background(), tc.user, "default")
			if incomplete != tc.wantIncomplete || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("incomplete = %v, err = %v; want %v, %q", incomplete, err, tc.wantIncomplete, tc.wantErr)
			}
			verb, res, _ := strings.Cut(tc.wantResource, " ")
			if !slices.ContainsFunc(resource, func(r authorizer.ResourceRuleInfo) bool {
				return slices.Contains(r.GetVerbs(), verb) && slices.Contains(r.GetResources(), res)
			}) {
				t.Errorf("rules lack %q", tc.wantResource)
			}
		})
	}
	// The admin's everything, from masters and from RBAC's cluster-admin, is listed once.
	clusterAdmin := func(user.Info, string) ([]rbacv1.PolicyRule, error) { return everything, nil }
	resource, nonResource, _, _ := NewRuleResolver(BootstrapPolicy(), clusterAdmin).RulesFor(context.Background(), &user.DefaultInfo{Name: "admin", Groups: []string{MastersGroup}}, "default")
	wildcards := 0
	for _, r := range resource {
		if slices.Contains(r.GetResources(), "*") {
			wildcards++
		}
	}
	if wildcards != 1 || len(nonResource) == 0 || !slices.Contains(nonResource[0].GetNonResourceURLs(), "*") {
		t.Errorf("admin's rules: %d wildcard resource rules (want 1), non-resource %v", wildcards, nonResource)
	}
	// Nobody but masters gets wildcards.
	resource, _, _, _ = NewRuleResolver(BootstrapPolicy(), podReader).RulesFor(context.Background(), &user.DefaultInfo{Name: "alice", Groups: authenticated}, "default")
	for _, r := range resource {
		if slices.Contains(r.GetResources(), "*") {
			t.Errorf("alice holds a wildcard rule %+v", r)
		}
	}
}
