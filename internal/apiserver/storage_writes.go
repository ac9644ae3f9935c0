package apiserver

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth/berth/internal/store"
)

// objectWriter is a store wrapper (the pods' node accounting) that needs the
// objects behind the bytes it writes. Given them, it spares decoding the
// value just encoded and re-reading the old object just read.
type objectWriter interface {
	createObject(ctx context.Context, key string, value []byte, obj runtime.Object) (int64, error)
	// updateObject's old was read at expected; obj is what value encodes.
	updateObject(ctx context.Context, key string, expected int64, value []byte, old, obj runtime.Object) (int64, error)
	// deleteObject's old was read at expected (non-zero).
	deleteObject(ctx context.Context, key string, expected int64, old runtime.Object) (int64, error)
}

// create writes value (obj encoded) at key, if nothing is there.
func (s *objectStore) create(ctx context.Context, key string, value []byte, obj runtime.Object) (int64, error) {
	if w, ok := s.store.(objectWriter); ok {
		return w.createObject(ctx, key, value, obj)
	}
	if e, ok := s.expiring(); ok {
		return e.CreateExpiring(ctx, key, value, s.ttl)
	}
	return s.store.Create(ctx, key, value)
}

// update replaces old (read at expected) with value (obj encoded).
func (s *objectStore) update(ctx context.Context, key string, expected int64, value []byte, old, obj runtime.Object) (int64, error) {
	if w, ok := s.store.(objectWriter); ok {
		return w.updateObject(ctx, key, expected, value, old, obj)
	}
	return s.rewrite(ctx, key, expected, value)
}

// rewrite replaces the value at key, read at expected. A resource whose
// objects expire (events) gets its full ttl again from every write, as
// kube-apiserver's events do.
func (s *objectStore) rewrite(ctx context.Context, key string, expected int64, value []byte) (int64, error) {
	if e, ok := s.expiring(); ok {
		return e.UpdateExpiring(ctx, key, expected, value, s.ttl)
	}
	return s.store.Update(ctx, key, expected, value)
}

// expiring is the store's expiring writes, when this resource's objects
// expire and the store can do it.
func (s *objectStore) expiring() (store.Expiring, bool) {
	if s.ttl <= 0 {
		return nil, false
	}
	e, ok := s.store.(store.Expiring)
	return e, ok
}

// delete removes old, read at expected, from key.
func (s *objectStore) delete(ctx context.Context, key string, expected int64, old runtime.Object) (int64, error) {
	if w, ok := s.store.(objectWriter); ok {
		return w.deleteObject(ctx, key, expected, old)
	}
	return s.store.Delete(ctx, key, expected)
}

// getCachedOrStored reads one object and its mod revision for a write whose
// transaction guards that revision: from the collection reader (the watch
// cache: shared, not to be modified, possibly stale), or from the store when
// fromStore or when the reader does not have it. A stale read costs the
// caller a conflict and a retry with fromStore, never a wrong write.
func (s *objectStore) getCachedOrStored(ctx context.Context, name string, fromStore bool) (runtime.Object, int64, error) {
	if !fromStore {
		obj, _, err := s.reader.Get(ctx, s.keyFor(ctx, name), 0)
		if err == nil {
			if rev, ok := modRevision(obj); ok {
				return obj, rev, nil
			}
		}
	}
	return s.get(ctx, name)
}

// cachedOrStored is getCachedOrStored for callers that need the concrete
// type (the pod being bound, its node).
func cachedOrStored[T runtime.Object](ctx context.Context, s *objectStore, name string, fromStore bool) (T, int64, error) {
	var zero T
	obj, rev, err := s.getCachedOrStored(ctx, name, fromStore)
	if err != nil {
		return zero, 0, err
	}
	typed, ok := obj.(T)
	if !ok {
		return zero, 0, apierrors.NewInternalError(fmt.Errorf("%s %s decoded as %T", s.res.kind, name, obj))
	}
	return typed, rev, nil
}

// modRevision is the revision an object read from the store carries.
func modRevision(obj runtime.Object) (int64, bool) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return 0, false
	}
	rev, err := strconv.ParseInt(accessor.GetResourceVersion(), 10, 64)
	return rev, err == nil && rev > 0
}
