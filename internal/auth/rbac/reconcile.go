package rbac

import (
	"context"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EnsureDefaults creates each default ClusterRole and ClusterRoleBinding,
// and each default Role and RoleBinding, that does not exist. Existing ones
// are left exactly as they are: an operator's change to a default role (or
// its deletion and re-creation with other rules) is theirs to keep.
func EnsureDefaults(ctx context.Context, client kubernetes.Interface, log *slog.Logger) error {
	roles, bindings := DefaultPolicy()
	created := 0
	for _, r := range roles {
		_, err := client.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{FieldManager: "berth-rbac-defaults"})
		if err := tally(err, &created); err != nil {
			return fmt.Errorf("default clusterrole %s: %w", r.Name, err)
		}
	}
	for _, b := range bindings {
		_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{FieldManager: "berth-rbac-defaults"})
		if err := tally(err, &created); err != nil {
			return fmt.Errorf("default clusterrolebinding %s: %w", b.Name, err)
		}
	}
	nsRoles, nsBindings := DefaultNamespacedPolicy()
	for _, r := range nsRoles {
		_, err := client.RbacV1().Roles(r.Namespace).Create(ctx, r, metav1.CreateOptions{FieldManager: "berth-rbac-defaults"})
		if err := tally(err, &created); err != nil {
			return fmt.Errorf("default role %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	for _, b := range nsBindings {
		_, err := client.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{FieldManager: "berth-rbac-defaults"})
		if err := tally(err, &created); err != nil {
			return fmt.Errorf("default rolebinding %s/%s: %w", b.Namespace, b.Name, err)
		}
	}
	log.Info("default RBAC policy in place", "created", created, "roles", len(roles)+len(nsRoles), "bindings", len(bindings)+len(nsBindings))
	return nil
}

// tally counts a successful create; an existing object is no error.
func tally(err error, created *int) error {
	switch {
	case err == nil:
		*created++
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	default:
		return err
	}
}
