package rbac

import (
	"context"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
)

// listersOf are real client-go listers over indexers holding objs.
func listersOf(t testing.TB, objs ...runtime.Object) Listers {
	t.Helper()
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	roles, rbs, crs, crbs := idx(), idx(), idx(), idx()
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *rbacv1.Role:
			err = roles.Add(o)
		case *rbacv1.RoleBinding:
			err = rbs.Add(o)
		case *rbacv1.ClusterRole:
			err = crs.Add(o)
		case *rbacv1.ClusterRoleBinding:
			err = crbs.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return Listers{
		Roles: rbaclisters.NewRoleLister(roles), RoleBindings: rbaclisters.NewRoleBindingLister(rbs),
		ClusterRoles: rbaclisters.NewClusterRoleLister(crs), ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(crbs),
	}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func podReader() rbacv1.PolicyRule { return rule(readVerbs, core, "pods") }

var (
	readVerbs = []string{"get", "list", "watch"}
	core      = []string{""}
)

func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

// defaultPolicyObjects is every object of DefaultPolicy.
func defaultPolicyObjects() []runtime.Object {
	p := DefaultPolicy()
	var objs []runtime.Object
	for i := range p.ClusterRoles {
		objs = append(objs, &p.ClusterRoles[i])
	}
	for i := range p.ClusterRoleBindings {
		objs = append(objs, &p.ClusterRoleBindings[i])
	}
	for _, roles := range p.Roles {
		for i := range roles {
			objs = append(objs, &roles[i])
		}
	}
	for _, bindings := range p.RoleBindings {
		for i := range bindings {
			objs = append(objs, &bindings[i])
		}
	}
	return objs
}

var (
	monitor = &user.DefaultInfo{Name: "monitor", Groups: []string{user.AllAuthenticated}}
	alice   = &user.DefaultInfo{Name: "alice", Groups: []string{"devs", user.AllAuthenticated}}
	robot   = &user.DefaultInfo{Name: "system:serviceaccount:team:robot", Groups: []string{"system:serviceaccounts"}}
)

func testPolicy() []runtime.Object {
	return []runtime.Object{
		clusterRole("pod-reader", podReader()),
		clusterRole("secret-reader", rule(readVerbs, core, "secrets")),
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "monitor"}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cm-writer"}, Rules: []rbacv1.PolicyRule{rule([]string{"create", "get"}, core, "configmaps")}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "devs-write"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-writer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"}, {Kind: rbacv1.ServiceAccountKind, Name: "robot"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "secrets-via-clusterrole"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secret-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "dangling"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "missing"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "monitor"}}},
	}
}

func request(u user.Info, verb, resource, namespace string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Resource: resource, Namespace: namespace, APIVersion: "v1", ResourceRequest: true}
}

func TestAuthorizerDecidesFromBindings(t *testing.T) {
	t.Parallel()
	authz := NewAuthorizer(listersOf(t, testPolicy()...), func() bool { return true })
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"clusterrolebinding grants across namespaces", request(monitor, "watch", "pods", ""), true},
		{"clusterrolebinding grants in a namespace", request(monitor, "list", "pods", "kube-system"), true},
		{"nothing grants pod writes", request(monitor, "create", "pods", "team"), false},
		{"nothing grants the monitor secrets", request(monitor, "get", "secrets", "team"), false},
		{"a binding to a missing role grants nothing", request(monitor, "get", "configmaps", "team"), false},
		{"group subject of a rolebinding", request(alice, "create", "configmaps", "team"), true},
		{"rolebinding is confined to its namespace", request(alice, "create", "configmaps", "default"), false},
		{"rolebinding of a clusterrole in its namespace", request(alice, "get", "secrets", "team"), true},
		{"rolebinding of a clusterrole is not cluster-wide", request(alice, "list", "secrets", ""), false},
		{"service account subject defaults to the binding's namespace", request(robot, "get", "configmaps", "team"), true},
		{"verb not in the role", request(robot, "delete", "configmaps", "team"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := authz.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got := d == authorizer.DecisionAllow; got != tc.allow {
				t.Fatalf("allowed = %v (%q), want %v", got, reason, tc.allow)
			}
			if tc.allow && !strings.Contains(reason, "RBAC: allowed by") {
				t.Errorf("reason %q does not name the binding", reason)
			}
			if !tc.allow && d != authorizer.DecisionNoOpinion {
				t.Errorf("decision %v, want no opinion (the union denies)", d)
			}
		})
	}
}

func TestAuthorizerHasNoOpinionUntilSynced(t *testing.T) {
	t.Parallel()
	authz := NewAuthorizer(listersOf(t, testPolicy()...), func() bool { return false })
	if d, _, _ := authz.Authorize(context.Background(), request(monitor, "list", "pods", "")); d != authorizer.DecisionNoOpinion {
		t.Fatalf("decision before sync = %v", d)
	}
}

// TestDefaultPolicyBindsAsUpstream checks the default policy as objects:
// upstream's roles and bindings, each labelled as the server's, with
// berth's additions for nodes and bootstrap tokens.
func TestDefaultPolicyBindsAsUpstream(t *testing.T) {
	t.Parallel()
	objs := defaultPolicyObjects()
	names := map[string]bool{}
	for _, o := range objs {
		r, ok := o.(*rbacv1.ClusterRole)
		if !ok {
			continue
		}
		if r.Labels[BootstrappingLabel] != BootstrappingValue {
			t.Errorf("role %s lacks the bootstrapping label", r.Name)
		}
		if names[r.Name] {
			t.Errorf("role %s defined twice", r.Name)
		}
		names[r.Name] = true
	}
	for _, want := range []string{"cluster-admin", "admin", "edit", "view", "system:aggregate-to-edit", "system:basic-user", "system:discovery",
		"system:public-info-viewer", "system:kube-scheduler", "system:node-bootstrapper", "system:node-proxier",
		"system:controller:deployment-controller", "system:coredns"} {
		if !names[want] {
			t.Errorf("default role %s missing", want)
		}
	}
	authz := NewAuthorizer(listersOf(t, objs...), func() bool { return true })
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	bootstrapper := &user.DefaultInfo{Name: "system:bootstrap:abcdef", Groups: []string{BootstrappersGroup, user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "root", Groups: []string{"system:masters"}}
	node := &user.DefaultInfo{Name: "system:node:a", Groups: []string{"system:nodes", user.AllAuthenticated}}
	deploymentController := &user.DefaultInfo{Name: "system:serviceaccount:kube-system:deployment-controller",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", user.AllAuthenticated}}
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"masters are cluster-admin", request(admin, "delete", "secrets", "kube-system"), true},
		{"anonymous reads /version", authorizer.AttributesRecord{User: anonymous, Verb: "get", Path: "/version"}, true},
		{"anonymous gets no discovery", authorizer.AttributesRecord{User: anonymous, Verb: "get", Path: "/api"}, false},
		{"authenticated discover", authorizer.AttributesRecord{User: monitor, Verb: "get", Path: "/apis"}, true},
		{"authenticated may ask can-i", authorizer.AttributesRecord{User: monitor, Verb: "create", APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", ResourceRequest: true}, true},
		{"bootstrappers create CSRs", authorizer.AttributesRecord{User: bootstrapper, Verb: "create", APIGroup: "certificates.k8s.io", Resource: "certificatesigningrequests", ResourceRequest: true}, true},
		{"bootstrappers cannot approve", authorizer.AttributesRecord{User: bootstrapper, Verb: "update", APIGroup: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "approval", ResourceRequest: true}, false},
		{"nodes get no RBAC role (the Node authorizer decides)", request(node, "get", "secrets", "default"), false},
		{"nodes are bound to system:node-proxier", authorizer.AttributesRecord{User: node, Verb: "watch", APIGroup: "discovery.k8s.io", Resource: "endpointslices", ResourceRequest: true}, true},
		{"authenticated users read no pods", request(monitor, "list", "pods", ""), false},
		{"the deployment controller's account scales replica sets", authorizer.AttributesRecord{User: deploymentController, Verb: "update", APIGroup: "apps", Resource: "replicasets", Namespace: "default", ResourceRequest: true}, true},
		{"the deployment controller's account reads no secrets", request(deploymentController, "get", "secrets", "default"), false},
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

func TestEscalationCheck(t *testing.T) {
	t.Parallel()
	objs := append(testPolicy(),
		clusterRole("rbac-writer", rule([]string{"create", "update"}, []string{rbacv1.GroupName}, "clusterroles", "clusterrolebindings", "roles", "rolebindings")),
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "monitor-writes-rbac"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "rbac-writer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "monitor"}, {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "binder"}}},
		clusterRole("binds-secret-reader", rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"secret-reader"}}),
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "binder"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "binds-secret-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "binder"}}},
	)
	listers := listersOf(t, objs...)
	check := NewEscalationCheck(listers, NewAuthorizer(listers, func() bool { return true }))
	binder := &user.DefaultInfo{Name: "binder", Groups: []string{user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "root", Groups: []string{"system:masters"}}
	crb := func(role string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}}}
	}
	cases := []struct {
		name  string
		obj   runtime.Object
		u     user.Info
		allow bool
	}{
		{"a role within what the author holds", clusterRole("r", podReader()), monitor, true},
		{"a role granting more than the author holds", clusterRole("r", podReader(), rule(readVerbs, core, "secrets")), monitor, false},
		{"a wildcard role", clusterRole("r", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}), monitor, false},
		{"binding a role the author holds", crb("pod-reader"), monitor, true},
		{"binding a role the author does not hold", crb("secret-reader"), monitor, false},
		{"binding with the bind verb on that role", crb("secret-reader"), binder, true},
		{"bind on one role is not bind on another", crb("cluster-admin-like"), binder, false},
		{"masters may grant anything", crb("secret-reader"), admin, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource := "clusterroles"
			if _, ok := tc.obj.(*rbacv1.ClusterRoleBinding); ok {
				resource = "clusterrolebindings"
			}
			res := rbacv1.SchemeGroupVersion.WithResource(resource)
			attrs := admission.NewAttributesRecord(tc.obj, nil, rbacv1.SchemeGroupVersion.WithKind("X"), "", "r", res, "", admission.Create, nil, false, tc.u)
			err := check.Validate(context.Background(), attrs, nil)
			if tc.allow && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.allow && !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want Forbidden", err)
			}
		})
	}
}

// An aggregationRule gathers the rules of any role its selectors match, now
// or later, so setting, changing or dropping one takes cluster-admin's
// authority or escalate, whatever the role's own rules (upstream's
// ClusterRole storage).
func TestEscalationCheckAggregationRule(t *testing.T) {
	t.Parallel()
	objs := append(testPolicy(),
		clusterRole("rbac-writer", rule([]string{"create", "update"}, []string{rbacv1.GroupName}, "clusterroles")),
		clusterRole("cluster-admin",
			rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}),
		clusterRole("escalator", rbacv1.PolicyRule{Verbs: []string{"escalate"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}}),
		bindUsers("monitor-writes-rbac", "rbac-writer", "monitor", "escalating", "almost-admin", "real-admin"),
		bindUsers("escalating-escalates", "escalator", "escalating"),
		// The everyday verbs on every resource, and every URL: not full
		// authority, which is every verb ("*": escalate, bind, impersonate...).
		clusterRole("all-resources",
			rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}),
		bindUsers("almost-admin-resources", "all-resources", "almost-admin"),
		bindUsers("real-admin-is-admin", "cluster-admin", "real-admin"),
	)
	listers := listersOf(t, objs...)
	check := NewEscalationCheck(listers, NewAuthorizer(listers, func() bool { return true }))
	named := func(name string) user.Info {
		return &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}}
	}
	aggregating := func(rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		r := clusterRole("r", rules...)
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}}}
		return r
	}
	noSelectors := clusterRole("r", podReader())
	noSelectors.AggregationRule = &rbacv1.AggregationRule{}
	const refusal = `clusterroles.rbac.authorization.k8s.io "r" is forbidden: must have cluster-admin privileges to use the aggregationRule`
	cases := []struct {
		name     string
		op       admission.Operation
		obj, old *rbacv1.ClusterRole
		u        user.Info
		want     string // "" allows
	}{
		{"create aggregating, no rules", admission.Create, aggregating(), nil, monitor, refusal},
		{"create aggregating, with held rules", admission.Create, aggregating(podReader()), nil, monitor, refusal},
		{"create aggregating with unheld rules names the rules first", admission.Create, aggregating(rule(readVerbs, core, "secrets")), nil, monitor, "not currently held"},
		{"update adds an aggregationRule", admission.Update, aggregating(podReader()), clusterRole("r", podReader()), monitor, refusal},
		{"update drops an aggregationRule", admission.Update, clusterRole("r", podReader()), aggregating(podReader()), monitor, refusal},
		{"update keeps an aggregationRule", admission.Update, aggregating(podReader()), aggregating(), monitor, refusal},
		{"update without one", admission.Update, clusterRole("r", podReader()), clusterRole("r"), monitor, ""},
		{"an aggregationRule without selectors aggregates nothing", admission.Create, noSelectors, nil, monitor, ""},
		{"the everyday verbs on everything are not full authority", admission.Create, aggregating(), nil, named("almost-admin"), refusal},
		{"full authority by binding", admission.Create, aggregating(), nil, named("real-admin"), ""},
		{"escalate", admission.Create, aggregating(), nil, named("escalating"), ""},
		{"escalate on update", admission.Update, clusterRole("r"), aggregating(), named("escalating"), ""},
		{"masters", admission.Create, aggregating(), nil, &user.DefaultInfo{Name: "root", Groups: []string{"system:masters"}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var old runtime.Object
			if tc.old != nil {
				old = tc.old
			}
			res := rbacv1.SchemeGroupVersion.WithResource("clusterroles")
			attrs := admission.NewAttributesRecord(tc.obj, old, rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), "", "r", res, "", tc.op, nil, false, tc.u)
			err := check.Validate(context.Background(), attrs, nil)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want Forbidden", err)
			}
			if tc.want == refusal && err.Error() != refusal || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %q, want %q", err, tc.want)
			}
		})
	}
}

func bindUsers(name, role string, users ...string) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
	for _, u := range users {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	return b
}

// TestAggregatedDefaultsGrantFromCreation binds the admin, edit and view
// roles as EnsureDefaults first creates them, before any aggregation
// controller runs: each grants what upstream's aggregated role grants.
func TestAggregatedDefaultsGrantFromCreation(t *testing.T) {
	t.Parallel()
	var objs []runtime.Object
	aggregated := aggregatedDefaults(DefaultPolicy().ClusterRoles)
	for i := range aggregated {
		objs = append(objs, &aggregated[i])
	}
	var order []string
	for _, r := range aggregated {
		order = append(order, r.Name)
	}
	// The aggregation controller recomputes a role as it appears: each comes
	// after the aggregated roles it selects, or loses their rules a while.
	if want := []string{"view", "edit", "admin"}; !slices.Equal(order, want) {
		t.Errorf("aggregated default roles in order %v, want %v", order, want)
	}
	for _, name := range []string{"admin", "edit", "view"} {
		objs = append(objs, bindUsers(name, name, name+"-user"))
	}
	authz := NewAuthorizer(listersOf(t, objs...), func() bool { return true })
	as := func(name string) user.Info {
		return &user.DefaultInfo{Name: name + "-user", Groups: []string{user.AllAuthenticated}}
	}
	apps := func(u user.Info, verb, resource string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: "apps", Resource: resource, Namespace: "default", ResourceRequest: true}
	}
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"view lists configmaps", request(as("view"), "list", "configmaps", "default"), true},
		{"view reads no secrets", request(as("view"), "get", "secrets", "default"), false},
		{"view creates no deployments", apps(as("view"), "create", "deployments"), false},
		{"edit creates deployments", apps(as("edit"), "create", "deployments"), true},
		{"edit lists configmaps (view's rules)", request(as("edit"), "list", "configmaps", "default"), true},
		{"edit binds no roles", authorizer.AttributesRecord{User: as("edit"), Verb: "create", APIGroup: rbacv1.GroupName, Resource: "rolebindings", Namespace: "default", ResourceRequest: true}, false},
		{"admin binds roles", authorizer.AttributesRecord{User: as("admin"), Verb: "create", APIGroup: rbacv1.GroupName, Resource: "rolebindings", Namespace: "default", ResourceRequest: true}, true},
		{"admin scales statefulsets (edit's rules)", authorizer.AttributesRecord{User: as("admin"), Verb: "update", APIGroup: "apps", Resource: "statefulsets", Subresource: "scale", Namespace: "default", ResourceRequest: true}, true},
	}
	for _, tc := range cases {
		d, _, err := authz.Authorize(context.Background(), tc.attrs)
		if err != nil {
			t.Fatal(err)
		}
		if got := d == authorizer.DecisionAllow; got != tc.allow {
			t.Errorf("%s: allowed = %v, want %v", tc.name, got, tc.allow)
		}
	}
}
