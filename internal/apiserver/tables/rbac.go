package tables

import (
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RBAC kinds print as kube-apiserver prints them: roles with their
// creation time, bindings with the role they bind and (wide) the subjects.

func createdAtColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Created At", Type: "date", Description: objectMetaDocs["creationTimestamp"]}
}

func rolePrinter[T runtime.Object](meta func(T) *metav1.ObjectMeta) printer {
	return typed([]metav1.TableColumnDefinition{nameColumn(), createdAtColumn()}, func(r T, _ time.Time) metav1.TableRow {
		m := meta(r)
		return cells(m.Name, m.CreationTimestamp.UTC().Format(time.RFC3339))
	})
}

func bindingPrinter[T runtime.Object](parts func(T) (*metav1.ObjectMeta, rbacv1.RoleRef, []rbacv1.Subject)) printer {
	columns := []metav1.TableColumnDefinition{
		nameColumn(), column("Role", "Role"), ageColumn(),
		wideColumn("Users", "Users in the roleBinding"), wideColumn("Groups", "Groups in the roleBinding"),
		wideColumn("ServiceAccounts", "ServiceAccounts in the roleBinding"),
	}
	return typed(columns, func(b T, now time.Time) metav1.TableRow {
		m, ref, subjects := parts(b)
		var users, groups, sas []string
		for _, s := range subjects {
			switch s.Kind {
			case rbacv1.UserKind:
				users = append(users, s.Name)
			case rbacv1.GroupKind:
				groups = append(groups, s.Name)
			case rbacv1.ServiceAccountKind:
				sas = append(sas, s.Namespace+"/"+s.Name)
			}
		}
		return cells(m.Name, ref.Kind+"/"+ref.Name, since(m.CreationTimestamp, now),
			strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", "))
	})
}

func rbacPrinters() map[string]printer {
	return map[string]printer{
		"Role":        rolePrinter(func(r *rbacv1.Role) *metav1.ObjectMeta { return &r.ObjectMeta }),
		"ClusterRole": rolePrinter(func(r *rbacv1.ClusterRole) *metav1.ObjectMeta { return &r.ObjectMeta }),
		"RoleBinding": bindingPrinter(func(b *rbacv1.RoleBinding) (*metav1.ObjectMeta, rbacv1.RoleRef, []rbacv1.Subject) {
			return &b.ObjectMeta, b.RoleRef, b.Subjects
		}),
		"ClusterRoleBinding": bindingPrinter(func(b *rbacv1.ClusterRoleBinding) (*metav1.ObjectMeta, rbacv1.RoleRef, []rbacv1.Subject) {
			return &b.ObjectMeta, b.RoleRef, b.Subjects
		}),
	}
}
