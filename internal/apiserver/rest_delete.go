package apiserver

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
)

// Delete implements rest.GracefulDeleter. It returns deleted=false when the
// object only got marked (graceful deletion, or finalizers still pending).
// The propagation policy becomes the owner's garbage-collection finalizer
// (rest_delete_propagation.go); the garbage collector acts on it.
// A delete that removed the object answers as deletedAnswer says.
func (r *resourceREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	r.warnOfDefaultOrphaning(ctx, options)
	obj, deleted, err := r.deleteObject(ctx, name, deleteValidation, options)
	if err == nil && deleted {
		obj = r.deletedAnswer(obj)
	}
	return obj, deleted, err
}

// deleteObject is Delete answering with the object itself.
func (r *resourceREST) deleteObject(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if options == nil {
		options = &metav1.DeleteOptions{}
	}
	for attempt := 0; ; attempt++ {
		obj, deleted, err := r.tryDelete(ctx, name, deleteValidation, options.DeepCopy())
		if err != errRetryUpdate || attempt >= maxConflictRetries {
			if err == errRetryUpdate {
				err = apierrors.NewConflict(r.groupResource(), name, err)
			}
			return obj, deleted, err
		}
	}
}

// returnsDeletedObject are the resources whose delete answers with the
// deleted object, as upstream's stores that set ReturnDeletedObject
// (pkg/registry/.../storage/storage.go).
var returnsDeletedObject = map[schema.GroupResource]bool{
	{Resource: "pods"}:                   true,
	{Resource: "namespaces"}:             true,
	{Resource: "serviceaccounts"}:        true,
	{Resource: "services"}:               true,
	{Resource: "podtemplates"}:           true,
	{Resource: "resourcequotas"}:         true,
	{Resource: "persistentvolumes"}:      true,
	{Resource: "persistentvolumeclaims"}: true,

	{Group: "storage.k8s.io", Resource: "storageclasses"}:          true,
	{Group: "storage.k8s.io", Resource: "csidrivers"}:              true,
	{Group: "storage.k8s.io", Resource: "csinodes"}:                true,
	{Group: "storage.k8s.io", Resource: "volumeattachments"}:       true,
	{Group: "storage.k8s.io", Resource: "volumeattributesclasses"}: true,

	{Group: "resource.k8s.io", Resource: "resourceclaims"}:             true,
	{Group: "resource.k8s.io", Resource: "resourceclaimtemplates"}:     true,
	{Group: "resource.k8s.io", Resource: "resourceslices"}:             true,
	{Group: "resource.k8s.io", Resource: "deviceclasses"}:              true,
	{Group: "resource.k8s.io", Resource: "resourcepoolstatusrequests"}: true,
}

// deletedAnswer is what a delete that removed obj answers: obj itself for
// the resources returnsDeletedObject lists, otherwise a Success Status
// naming it, as upstream's store (finalizeDelete) answers.
func (r *resourceREST) deletedAnswer(obj runtime.Object) runtime.Object {
	gr := r.groupResource()
	if returnsDeletedObject[gr] {
		return obj
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	return &metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{
		Name: accessor.GetName(), Group: gr.Group, Kind: gr.Resource, UID: accessor.GetUID(),
	}}
}

func (r *resourceREST) tryDelete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, rev, err := r.get(ctx, name)
	if err != nil {
		return nil, false, err
	}
	// Admission judges the object as stored, as upstream's store does:
	// BeforeDelete below already marks it deleted.
	if deleteValidation != nil {
		if err := deleteValidation(ctx, obj); err != nil {
			return nil, false, err
		}
	}
	graceful, pending, err := rest.BeforeDelete(r.strategy, ctx, obj, options)
	if err != nil {
		return nil, false, err
	}
	if pending {
		// A graceful deletion is under way: as upstream, its finalizers
		// (and so its propagation policy) can no longer change.
		return obj, false, nil
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, false, apierrors.NewInternalError(err)
	}
	changed := graceful
	if policy := gcPolicy(ctx, r.strategy); policy != rest.Unsupported {
		changed = applyPropagationFinalizers(accessor, options, defaultPropagation(policy)) || changed
	}
	held := len(accessor.GetFinalizers()) > 0
	if !graceful && held && markDeletingForFinalizers(accessor, time.Now()) {
		changed = true
	}
	if isDryRun(options.DryRun) {
		return obj, !held && (!graceful || deletionFinished(accessor)), nil
	}
	if held || !deletionFinished(accessor) && graceful {
		if !changed {
			return obj, false, nil // already marked; the finalizers' owners finish it
		}
		return r.markDeleting(ctx, name, obj, rev)
	}
	if _, err := r.delete(ctx, r.keyFor(ctx, name), rev, obj); err != nil {
		return nil, false, r.retryOrError(err, name)
	}
	r.hooks.deleted(obj, options)
	return obj, true, nil
}

// markDeleting stores the deletionTimestamp and grace period BeforeDelete set.
func (r *resourceREST) markDeleting(ctx context.Context, name string, obj runtime.Object, rev int64) (runtime.Object, bool, error) {
	data, err := r.encode(obj)
	if err != nil {
		return nil, false, apierrors.NewInternalError(err)
	}
	newRev, err := r.rewrite(ctx, r.keyFor(ctx, name), rev, data)
	if err != nil {
		return nil, false, r.retryOrError(err, name)
	}
	return obj, false, setResourceVersion(obj, newRev)
}

// DeleteCollection implements rest.CollectionDeleter: it deletes each
// object the selectors match, one compare-and-swap at a time.
func (r *resourceREST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	r.warnOfDefaultOrphaning(ctx, options)
	listOptions = listOptions.DeepCopy()
	listOptions.ResourceVersion, listOptions.ResourceVersionMatch, listOptions.Limit, listOptions.Continue = "", "", 0, ""
	listObj, err := r.List(ctx, listOptions)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(listObj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	deleted := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		accessor, err := meta.Accessor(item)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		obj, _, err := r.deleteObject(withObjectNamespace(ctx, accessor.GetNamespace()), accessor.GetName(), deleteValidation, options)
		if apierrors.IsNotFound(err) {
			continue // deleted concurrently: that is what was asked
		}
		if err != nil {
			return nil, err
		}
		deleted = append(deleted, obj)
	}
	if err := meta.SetList(listObj, deleted); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	clearItemKinds(listObj)
	return listObj, nil
}

// warnOfDefaultOrphaning adds the kind's orphaning warning (upstream's Job
// storage has one) to a delete that names no propagation policy, when the
// kind's default for this request is to orphan dependents.
func (r *resourceREST) warnOfDefaultOrphaning(ctx context.Context, options *metav1.DeleteOptions) {
	//lint:ignore SA1019 OrphanDependents still chooses the policy, as upstream checks it
	if r.res.orphanWarning == "" || options == nil || options.PropagationPolicy != nil || options.OrphanDependents != nil {
		return
	}
	gc, ok := r.strategy.(rest.GarbageCollectionDeleteStrategy)
	if ok && gc.DefaultGarbageCollectionPolicy(ctx) == rest.OrphanDependents {
		warning.AddWarning(ctx, "", r.res.orphanWarning)
	}
}
