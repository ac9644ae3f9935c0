package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// systemNamespaces exist from the first start. Upstream's NamespaceLifecycle
// admission keeps the first three from being deleted, and new content out
// of missing and terminating namespaces.
func systemNamespaces() []string {
	return []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}
}

// namespaceREST is the namespaces resource: deleting one marks it
// Terminating; the namespace controller (internal/controller/namespace)
// empties it and calls namespaces/finalize, whose update removes it once
// no finalizer holds it.
type namespaceREST struct {
	*resourceREST
}

func (n *namespaceREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if options == nil {
		options = &metav1.DeleteOptions{}
	}
	for attempt := 0; attempt < maxConflictRetries; attempt++ {
		obj, err := n.markTerminating(ctx, name, deleteValidation, options.DeepCopy())
		if err != errRetryUpdate {
			return obj, false, err
		}
	}
	return nil, false, n.storeError(errRetryUpdate, name)
}

func (n *namespaceREST) markTerminating(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, error) {
	obj, rev, err := n.get(ctx, name)
	if err != nil {
		return nil, err
	}
	if _, _, err := rest.BeforeDelete(n.strategy, ctx, obj, options); err != nil {
		return nil, err
	}
	if deleteValidation != nil {
		if err := deleteValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	ns := obj.(*corev1.Namespace)
	if ns.DeletionTimestamp != nil {
		// As upstream, the first delete decides the propagation policy.
		return ns, nil
	}
	now := metav1.Now()
	ns.DeletionTimestamp = &now
	ns.Status.Phase = corev1.NamespaceTerminating
	applyPropagationFinalizers(ns, namespacePropagation(options), "")
	if isDryRun(options.DryRun) {
		return ns, nil
	}
	data, err := n.encode(ns)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	newRev, err := n.store.Update(ctx, n.keyFor(ctx, name), rev, data)
	if err != nil {
		return nil, n.retryOrError(err, name)
	}
	return ns, setResourceVersion(ns, newRev)
}

// namespacePropagation translates a namespace delete's options into the
// policy its garbage-collection finalizer records. Namespaces read the
// legacy orphanDependents=false as foreground, not background as other
// kinds do (upstream's namespace storage); the policy governs only objects
// whose ownerReferences name the namespace: its content is deleted by the
// namespace controller whatever the policy, as the "kubernetes" finalizer
// demands.
func namespacePropagation(options *metav1.DeleteOptions) *metav1.DeleteOptions {
	//lint:ignore SA1019 the legacy field is still part of the API and must be honoured
	orphan := options.OrphanDependents
	if orphan == nil {
		return options
	}
	policy := metav1.DeletePropagationForeground
	if *orphan {
		policy = metav1.DeletePropagationOrphan
	}
	return &metav1.DeleteOptions{PropagationPolicy: &policy}
}

// namespaceContentPending says obj is a namespace that a spec finalizer
// still holds (the namespace controller's "kubernetes" until it has emptied
// it, or another owner's until it calls namespaces/finalize): removing its
// last metadata finalizer must not remove it yet. Whoever removes the last
// finalizer of either kind removes the namespace: an update of it, or of
// namespaces/finalize, that leaves none (upstream's
// ShouldDeleteNamespaceDuringUpdate).
func namespaceContentPending(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) > 0
}

// ensureSystemNamespaces creates the namespaces every cluster has.
func (n *namespaceREST) ensureSystemNamespaces(ctx context.Context) error {
	ctx = withObjectNamespace(ctx, "")
	for _, name := range systemNamespaces() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := n.Create(ctx, ns, nil, &metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// ensureDefaultServiceAccounts gives the system namespaces their "default"
// ServiceAccount at start-up, before the ServiceAccounts controller runs,
// so the server's own first pods there are not refused by the
// ServiceAccount admission plugin.
func ensureDefaultServiceAccounts(ctx context.Context, accounts *resourceREST) error {
	for _, ns := range systemNamespaces() {
		obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
		_, err := accounts.Create(withObjectNamespace(ctx, ns), obj, nil, &metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("default service account of %s: %w", ns, err)
		}
	}
	return nil
}
