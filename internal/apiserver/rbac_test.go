package apiserver

import (
	"context"
	"errors"
	"net/http"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestRBACKindsValidateAndDefault(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	rbac := s.client.RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:pod-reader"}, // colons are fine in RBAC names
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create clusterrole: %v", err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read", Namespace: "default"},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "system:pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "monitor"}, {Kind: "ServiceAccount", Name: "robot"}}}
	got, err := rbac.RoleBindings("default").Create(ctx, binding, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create rolebinding: %v", err)
	}
	if got.RoleRef.APIGroup != rbacv1.GroupName || got.Subjects[0].APIGroup != rbacv1.GroupName || got.Subjects[1].APIGroup != "" {
		t.Errorf("defaults not applied: %+v %+v", got.RoleRef, got.Subjects)
	}

	before := storeRevision(t, s)
	bad := []struct {
		name   string
		create func() error
	}{
		{"rule without verbs", func() error {
			_, err := rbac.Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}}, metav1.CreateOptions{})
			return err
		}},
		{"non-resource URL in a namespaced role", func() error {
			_, err := rbac.Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"},
				Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}}, metav1.CreateOptions{})
			return err
		}},
		{"resource rule without api group", func() error {
			_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"},
				Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{"pods"}}}}, metav1.CreateOptions{})
			return err
		}},
		{"clusterrolebinding to a Role", func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
				RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "x"}}, metav1.CreateOptions{})
			return err
		}},
		{"service account subject without namespace in a clusterrolebinding", func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
				RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot"}}}, metav1.CreateOptions{})
			return err
		}},
		{"unknown subject kind", func() error {
			_, err := rbac.RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
				RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{Kind: "Robot", Name: "r2d2"}}}, metav1.CreateOptions{})
			return err
		}},
		{"changing a binding's roleRef", func() error {
			changed := got.DeepCopy()
			changed.RoleRef.Name = "cluster-admin"
			_, err := rbac.RoleBindings("default").Update(ctx, changed, metav1.UpdateOptions{})
			return err
		}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.create(); !apierrors.IsInvalid(err) {
				t.Fatalf("err = %v, want 422 Invalid", err)
			}
		})
	}
	assertStoreUnchanged(t, s, before)
}

// allowOnlyPodReads allows reading pods and nothing else.
var allowOnlyPodReads = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.IsResourceRequest() && a.GetResource() == "pods" && a.IsReadOnly() {
		return authorizer.DecisionAllow, "pods are readable", nil
	}
	if a.GetResource() == "selfsubjectaccessreviews" || a.GetResource() == "subjectaccessreviews" || a.GetResource() == "localsubjectaccessreviews" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

func TestAccessReviewsAskTheAuthorizer(t *testing.T) {
	t.Parallel()
	s := newTestServerWith(t, func(c *Config) { c.Authorizer = allowOnlyPodReads })
	ctx := testContext(t)
	reviews := s.client.AuthorizationV1()
	self := func(verb, resource string) *authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		r, err := reviews.SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: "default"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("selfsubjectaccessreview: %v", err)
		}
		return &r.Status
	}
	if st := self("list", "pods"); !st.Allowed || st.Reason != "pods are readable" {
		t.Errorf("list pods: %+v, want allowed with the authorizer's reason", st)
	}
	if st := self("delete", "pods"); st.Allowed {
		t.Errorf("delete pods: %+v, want not allowed", st)
	}
	sar, err := reviews.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "someone", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "default"}}}, metav1.CreateOptions{})
	if err != nil || sar.Status.Allowed {
		t.Errorf("subjectaccessreview of secrets: %+v, %v; want not allowed", sar, err)
	}
	local, err := reviews.LocalSubjectAccessReviews("default").Create(ctx, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "someone", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "watch", Resource: "pods", Namespace: "default"}}}, metav1.CreateOptions{})
	if err != nil || !local.Status.Allowed {
		t.Errorf("localsubjectaccessreview of pods: %+v, %v; want allowed", local, err)
	}

	before := storeRevision(t, s)
	_, err = reviews.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("review without a user: %v, want 422", err)
	}
	_, err = reviews.SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("review without attributes: %v, want 422", err)
	}
	_, err = reviews.LocalSubjectAccessReviews("default").Create(ctx, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "someone", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "kube-system"}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("local review of another namespace: %v, want 422", err)
	}
	assertStoreUnchanged(t, s, before) // reviews are never stored
}

// Reviews have no table form: asked for a Table, the server answers 406,
// as kube-apiserver does for storage without a table convertor.
func TestReviewsRefuseTables(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	sar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"}}}
	err := s.client.AuthorizationV1().RESTClient().Post().Resource("selfsubjectaccessreviews").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Body(sar).Do(ctx).Error()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusNotAcceptable {
		t.Fatalf("a review asked for as a Table: %v, want 406", err)
	}
}
