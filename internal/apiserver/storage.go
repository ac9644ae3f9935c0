package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth/berth/internal/store"
)

// objectStore is one resource's read-write path: single objects go to the
// store (quorum reads, compare-and-swap writes), collections to the reader.
// It is the only place that turns store bytes into typed objects and back.
type objectStore struct {
	res    *resource
	store  store.Interface
	reader collectionReader
	codecs codecs
	logger *slog.Logger
	// readView is Config.ReadView: how a requester sees what it reads.
	readView ReadView
	// ttl, when positive, is how long objects live after their last write
	// (Config.EventTTL, for events).
	ttl time.Duration
}

func (s *objectStore) groupResource() schema.GroupResource { return s.res.gvr.GroupResource() }

// decode turns a stored value into an object whose resourceVersion is the
// value's mod revision (the stored bytes never carry one).
func (s *objectStore) decode(kv store.KV) (runtime.Object, error) {
	obj, err := s.codecs.decodeFromStorage(kv.Value, s.res.storageGroupVersion())
	if err == nil && s.res.stored != nil {
		obj, err = s.res.stored.fromStorage(obj)
	}
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", kv.Key, err)
	}
	if err := setResourceVersion(obj, kv.ModRevision); err != nil {
		return nil, err
	}
	return obj, nil
}

func (s *objectStore) encode(obj runtime.Object) ([]byte, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := accessor.GetResourceVersion()
	accessor.SetResourceVersion("")
	defer accessor.SetResourceVersion(rv)
	if s.res.stored != nil {
		if obj, err = s.res.stored.toStorage(obj); err != nil {
			return nil, err
		}
	}
	return s.codecs.encodeForStorage(obj, s.res.storageGroupVersion())
}

func setResourceVersion(obj runtime.Object, rev int64) error {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}

// keyFor builds the store key of name in the request's namespace.
func (s *objectStore) keyFor(ctx context.Context, name string) string {
	return s.res.key(genericapirequest.NamespaceValue(ctx), name)
}

// get reads one object and its mod revision from the store (a quorum read).
func (s *objectStore) get(ctx context.Context, name string) (runtime.Object, int64, error) {
	kv, err := s.store.Get(ctx, s.keyFor(ctx, name))
	if err != nil {
		return nil, 0, s.storeError(err, name)
	}
	obj, err := s.decode(kv)
	if err != nil {
		return nil, 0, apierrors.NewInternalError(err)
	}
	return obj, kv.ModRevision, nil
}

// errNoSpace is a write refused by a full store, as kube-apiserver answers
// it: 500, no reason, etcd's own message.
var errNoSpace = &apierrors.StatusError{ErrStatus: metav1.Status{
	Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
	Message: "etcdserver: mvcc: database space exceeded",
}}

// storeError maps the store's sentinel errors to Kubernetes Status errors.
func (s *objectStore) storeError(err error, name string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apierrors.NewNotFound(s.groupResource(), name)
	case errors.Is(err, store.ErrAlreadyExists):
		return apierrors.NewAlreadyExists(s.groupResource(), name)
	case errors.Is(err, store.ErrConflict):
		return apierrors.NewConflict(s.groupResource(), name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	case errors.Is(err, store.ErrCompacted):
		return apierrors.NewResourceExpired("The resourceVersion for the provided request is too old.")
	case errors.Is(err, store.ErrTooLarge):
		return apierrors.NewRequestEntityTooLargeError(err.Error())
	case errors.Is(err, store.ErrTooManyRequests):
		return apierrors.NewTooManyRequests("the store is overloaded; retry", 1)
	case errors.Is(err, store.ErrNoSpace):
		return errNoSpace
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError(err.Error(), 1)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewInternalError(err)
}

// Get implements rest.Getter.
func (s *objectStore) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	obj, _, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	if view := s.viewFor(ctx); view != nil {
		obj = view(obj)
	}
	return obj, nil
}

// New and Destroy implement rest.Storage.
func (s *objectStore) New() runtime.Object { return s.res.newObj() }
func (s *objectStore) Destroy()            {}
func (s *objectStore) NamespaceScoped() bool {
	return s.res.namespaced
}

var _ rest.Getter = (*objectStore)(nil)
