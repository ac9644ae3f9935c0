package apiserver

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	// The rbac group's internal types, defaults and conversions in the
	// legacy scheme, which its registry strategies use.
	rbacapi "k8s.io/kubernetes/pkg/apis/rbac"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrole"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"
)

// rbacResources is rbac.authorization.k8s.io/v1, defaulted and validated
// by upstream's registry strategies. Privilege-escalation checks are
// admission's (internal/auth/rbac), since they need the requester's rules.
func rbacResources() []*resource {
	gv := rbacv1.SchemeGroupVersion
	return []*resource{
		{
			gvr: gv.WithResource("roles"), kind: "Role", singular: "role", namespaced: true,
			newObj: func() runtime.Object { return &rbacv1.Role{} }, newList: func() runtime.Object { return &rbacv1.RoleList{} },
			registry: &registryKind{strategy: role.Strategy, newInternal: func() runtime.Object { return &rbacapi.Role{} }},
		},
		{
			gvr: gv.WithResource("clusterroles"), kind: "ClusterRole", singular: "clusterrole",
			newObj: func() runtime.Object { return &rbacv1.ClusterRole{} }, newList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
			registry: &registryKind{strategy: clusterrole.Strategy, newInternal: func() runtime.Object { return &rbacapi.ClusterRole{} }},
		},
		{
			gvr: gv.WithResource("rolebindings"), kind: "RoleBinding", singular: "rolebinding", namespaced: true,
			newObj: func() runtime.Object { return &rbacv1.RoleBinding{} }, newList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
			registry: &registryKind{strategy: rolebinding.Strategy, newInternal: func() runtime.Object { return &rbacapi.RoleBinding{} }},
		},
		{
			gvr: gv.WithResource("clusterrolebindings"), kind: "ClusterRoleBinding", singular: "clusterrolebinding",
			newObj:   func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			newList:  func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
			registry: &registryKind{strategy: clusterrolebinding.Strategy, newInternal: func() runtime.Object { return &rbacapi.ClusterRoleBinding{} }},
		},
	}
}
