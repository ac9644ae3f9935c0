package rbac

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Nodes read exactly the ConfigMap where the API server publishes its
// client CA, and nothing else through the default Roles.
func TestNodesReadOnlyTheClientCAConfigMap(t *testing.T) {
	t.Parallel()
	authz := NewAuthorizer(listersOf(t, defaultPolicyObjects()...), func() bool { return true })
	node := &user.DefaultInfo{Name: "system:node:a", Groups: []string{"system:nodes", user.AllAuthenticated}}
	named := func(u user.Info, verb, namespace, name string) authorizer.AttributesRecord {
		a := request(u, verb, "configmaps", namespace)
		a.Name = name
		return a
	}
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"node gets the client CA", named(node, "get", "kube-system", "extension-apiserver-authentication"), true},
		{"node may not change it", named(node, "update", "kube-system", "extension-apiserver-authentication"), false},
		{"node gets no other kube-system ConfigMap", named(node, "get", "kube-system", "kube-proxy"), false},
		{"node lists no ConfigMaps", named(node, "list", "kube-system", ""), false},
		{"the same name elsewhere is not it", named(node, "get", "default", "extension-apiserver-authentication"), false},
		{"users are not nodes", named(monitor, "get", "kube-system", "extension-apiserver-authentication"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _, err := authz.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got := d == authorizer.DecisionAllow; got != tc.allow {
				t.Fatalf("allowed = %v, want %v", got, tc.allow)
			}
		})
	}
}
