package rbac

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// BenchmarkAuthorize is one decision among 500 ClusterRoleBindings and 500
// RoleBindings in the request's namespace, granted by the last RoleBinding
// (the authorizer scans bindings; this is its cost at that size).
func BenchmarkAuthorize(b *testing.B) {
	objs := []runtime.Object{clusterRole("pod-reader", podReader())}
	for i := range 500 {
		subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("user-%d", i)}}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"}
		objs = append(objs,
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("crb-%d", i)}, RoleRef: ref, Subjects: subject},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprintf("rb-%d", i)}, RoleRef: ref, Subjects: subject})
	}
	authz := NewAuthorizer(listersOf(b, objs...), func() bool { return true })
	attrs := request(&user.DefaultInfo{Name: "user-499"}, "list", "pods", "team")
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if d, _, _ := authz.Authorize(ctx, attrs); d != authorizer.DecisionAllow {
			b.Fatal("not allowed")
		}
	}
}
