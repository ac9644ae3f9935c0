package apiserver

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth/berth/internal/store"
)

// resourceREST serves one resource (or one of its status-like subresources,
// when its strategy says forStatus) through k8s.io/apiserver's handlers.
type resourceREST struct {
	*objectStore
	strategy writeStrategy
	table    rest.TableConvertor
	// hooks, when set, run around writes as upstream's store hooks do.
	hooks *writeHooks
}

var (
	_ rest.Creater           = (*resourceREST)(nil)
	_ rest.Updater           = (*resourceREST)(nil)
	_ rest.Patcher           = (*resourceREST)(nil)
	_ rest.GracefulDeleter   = (*resourceREST)(nil)
	_ rest.CollectionDeleter = (*resourceREST)(nil)
	_ rest.Lister            = (*resourceREST)(nil)
	_ rest.Watcher           = (*resourceREST)(nil)
)

// maxConflictRetries bounds the re-read-and-retry loop of unconditional updates.
const maxConflictRetries = 16

func isDryRun(dryRun []string) bool { return len(dryRun) > 0 }

// Create implements rest.Creater.
func (r *resourceREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (_ runtime.Object, err error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	rest.FillObjectMetaSystemFields(accessor)
	if accessor.GetName() == "" && accessor.GetGenerateName() != "" {
		accessor.SetName(r.strategy.GenerateName(accessor.GetGenerateName()))
	}
	if r.res.namespaced && accessor.GetNamespace() == "" {
		accessor.SetNamespace(genericapirequest.NamespaceValue(ctx))
	}
	finish, err := r.hooks.startCreate(ctx, obj, options)
	if err != nil {
		return nil, err
	}
	defer func() { finish(err == nil) }()
	if err := rest.BeforeCreate(r.strategy, ctx, obj); err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	data, err := r.encode(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if isDryRun(options.DryRun) {
		return obj, nil
	}
	rev, err := r.create(ctx, r.res.key(accessor.GetNamespace(), accessor.GetName()), data, obj)
	if err != nil {
		return nil, rest.CheckGeneratedNameError(ctx, r.strategy, r.storeError(err, accessor.GetName()), obj)
	}
	return obj, setResourceVersion(obj, rev)
}

// Update implements rest.Updater: read, apply the caller's change, check,
// then compare-and-swap on the read revision, retrying on a fresh read when
// the store moved in between. A caller whose resourceVersion is stale gets 409.
//
// The first attempt starts from the watch cache's copy, as kube-apiserver's
// GuaranteedUpdate does: when it is current (almost always) that spares a
// quorum read and a decode per update. When anything fails on it (the
// compare-and-swap, a precondition, validation), the next attempt re-reads
// from the store, so a stale copy never decides an answer. Dry runs read
// the store.
func (r *resourceREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	fromStore := isDryRun(options.DryRun)
	for attempt := 0; ; attempt++ {
		obj, created, err := r.tryUpdate(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options, fromStore)
		if err != nil && !fromStore {
			fromStore = true
			continue
		}
		fromStore = true
		if !errors.Is(err, errRetryUpdate) || attempt >= maxConflictRetries {
			if errors.Is(err, errRetryUpdate) {
				err = r.storeError(store.ErrConflict, name)
			}
			return obj, created, err
		}
	}
}

// errRetryUpdate says the store moved between the read and the write.
var errRetryUpdate = errors.New("retry update")

// tryUpdate makes one attempt, starting from the store's object or, unless
// fromStore, the cache's (copied: cached objects are shared).
func (r *resourceREST) tryUpdate(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions, fromStore bool) (_ runtime.Object, _ bool, err error) {
	old, rev, err := r.getCachedOrStored(ctx, name, fromStore)
	if err == nil && !fromStore {
		old = old.DeepCopyObject()
	}
	if apierrors.IsNotFound(err) && (r.strategy.AllowCreateOnUpdate(ctx) || forceAllowCreate) {
		return r.createOnUpdate(ctx, name, objInfo, createValidation, options)
	}
	if err != nil {
		return nil, false, err
	}
	obj, err := objInfo.UpdatedObject(ctx, old)
	if err != nil {
		return nil, false, err
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	oldAccessor, _ := meta.Accessor(old)
	if accessor.GetResourceVersion() != "" && accessor.GetResourceVersion() != oldAccessor.GetResourceVersion() {
		return nil, false, r.storeError(store.ErrConflict, name)
	}
	accessor.SetResourceVersion(oldAccessor.GetResourceVersion())
	finish, err := r.hooks.startUpdate(ctx, obj, old, options)
	if err != nil {
		return nil, false, err
	}
	defer func() { finish(err == nil) }()
	if err := rest.BeforeUpdate(r.strategy, ctx, obj, old); err != nil {
		return nil, false, err
	}
	if updateValidation != nil {
		if err := updateValidation(ctx, obj.DeepCopyObject(), old.DeepCopyObject()); err != nil {
			return nil, false, err
		}
	}
	if isDryRun(options.DryRun) {
		return obj, false, nil
	}
	if deletionFinished(accessor) && !namespaceContentPending(obj) {
		// The last finalizer went away on an object already being deleted.
		if _, err := r.delete(ctx, r.keyFor(ctx, name), rev, old); err != nil {
			return nil, false, r.retryOrError(err, name)
		}
		r.hooks.deleted(old, &metav1.DeleteOptions{})
		return obj, false, nil
	}
	data, err := r.encode(obj)
	if err != nil {
		return nil, false, apierrors.NewInternalError(err)
	}
	newRev, err := r.update(ctx, r.keyFor(ctx, name), rev, data, old, obj)
	if err != nil {
		return nil, false, r.retryOrError(err, name)
	}
	return obj, false, setResourceVersion(obj, newRev)
}

// retryOrError turns a lost compare-and-swap into a retry: the next attempt
// re-reads, and answers 409 only if the caller's resourceVersion is stale.
func (r *resourceREST) retryOrError(err error, name string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, store.ErrConflict) {
		return errRetryUpdate
	}
	return r.storeError(err, name)
}

// deletionFinished says a deleting object has nothing left holding it.
func deletionFinished(accessor metav1.Object) bool {
	grace := accessor.GetDeletionGracePeriodSeconds()
	return accessor.GetDeletionTimestamp() != nil && len(accessor.GetFinalizers()) == 0 && (grace == nil || *grace == 0)
}

func (r *resourceREST) createOnUpdate(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, err := objInfo.UpdatedObject(ctx, nil)
	if err != nil {
		return nil, false, err
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	if accessor.GetName() != name {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", accessor.GetName(), name))
	}
	accessor.SetResourceVersion("")
	created, err := r.Create(ctx, obj, createValidation, &metav1.CreateOptions{DryRun: options.DryRun, FieldManager: options.FieldManager})
	return created, err == nil, err
}
