package rbac

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// EnsureDefaults puts the default policy in place as kube-apiserver's
// rbac/bootstrap-roles hook does, with upstream's reconciliation: missing
// roles and bindings are created, default ones lacking a rule or subject
// get it back unless annotated rbac.authorization.kubernetes.io/autoupdate
// =false, and nothing an operator added is removed. It is not the hook
// itself because the hook polls for 30 seconds whatever its context, and
// berth stops its loops with the server; the hook's migrations of clusters
// older than upstream's aggregated and split roles have nothing to migrate
// on berth, whose data never had that form.
//
// One step is berth's: admin, edit and view, when they do not exist yet,
// are created with their aggregated rules once the roles they aggregate
// exist, so they grant from the start instead of a moment later, once the
// aggregation controller has run. Existing ones are left to the controller.
// client must be privileged (system:masters).
func EnsureDefaults(ctx context.Context, client kubernetes.Interface, log *slog.Logger) error {
	p := DefaultPolicy()
	var errs []error
	run := func(kind, name string, reconcile func() error) {
		if ctx.Err() != nil {
			return
		}
		if err := retry.OnError(retry.DefaultBackoff, conflictOrUnavailable, reconcile); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, name, err))
		}
	}
	clusterRoles := client.RbacV1().ClusterRoles()
	reconcileClusterRoles := func(aggregated bool) {
		for i := range p.ClusterRoles {
			if role := &p.ClusterRoles[i]; (role.AggregationRule != nil) == aggregated {
				run("clusterrole", role.Name, func() error {
					return reconcileRole(reconciliation.ClusterRoleRuleOwner{ClusterRole: role}, reconciliation.ClusterRoleModifier{Client: clusterRoles})
				})
			}
		}
	}
	reconcileClusterRoles(false) // the roles admin, edit and view aggregate first
	for _, role := range aggregatedDefaults(p.ClusterRoles) {
		run("clusterrole", role.Name, func() error {
			_, err := clusterRoles.Create(ctx, &role, metav1.CreateOptions{FieldManager: "berth-rbac-defaults"})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
	reconcileClusterRoles(true)
	for i := range p.ClusterRoleBindings {
		b := &p.ClusterRoleBindings[i]
		run("clusterrolebinding", b.Name, func() error {
			return reconcileBinding(reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b},
				reconciliation.ClusterRoleBindingClientAdapter{Client: client.RbacV1().ClusterRoleBindings()})
		})
	}
	for _, roles := range p.Roles {
		for i := range roles {
			r := &roles[i]
			run("role", r.Namespace+"/"+r.Name, func() error {
				return reconcileRole(reconciliation.RoleRuleOwner{Role: r}, reconciliation.RoleModifier{Client: client.RbacV1(), NamespaceClient: client.CoreV1().Namespaces()})
			})
		}
	}
	for _, bindings := range p.RoleBindings {
		for i := range bindings {
			b := &bindings[i]
			run("rolebinding", b.Namespace+"/"+b.Name, func() error {
				return reconcileBinding(reconciliation.RoleBindingAdapter{RoleBinding: b},
					reconciliation.RoleBindingClientAdapter{Client: client.RbacV1(), NamespaceClient: client.CoreV1().Namespaces()})
			})
		}
	}
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return fmt.Errorf("default RBAC policy: %w", err)
	}
	log.Info("default RBAC policy in place", "clusterroles", len(p.ClusterRoles), "clusterrolebindings", len(p.ClusterRoleBindings))
	return nil
}

func reconcileRole(role reconciliation.RuleOwner, client reconciliation.RuleOwnerModifier) error {
	opts := reconciliation.ReconcileRoleOptions{Role: role, Client: client, Confirm: true}
	_, err := opts.Run()
	return err
}

func reconcileBinding(binding reconciliation.RoleBinding, client reconciliation.RoleBindingModifier) error {
	opts := reconciliation.ReconcileRoleBindingOptions{RoleBinding: binding, Client: client, Confirm: true}
	_, err := opts.Run()
	return err
}

// conflictOrUnavailable is what upstream's hook retries a reconcile on.
func conflictOrUnavailable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsServiceUnavailable(err)
}
