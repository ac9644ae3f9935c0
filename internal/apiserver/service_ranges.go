package apiserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/rangeallocation"
	"k8s.io/kubernetes/pkg/registry/core/service/allocator"

	"github.com/berth/berth/internal/store"
)

// storedRange is an allocation bitmap kept in the store as one
// RangeAllocation object, at the key and in the form kube-apiserver keeps
// its bitmaps (/registry/ranges/..., core/v1 protobuf). Every change reads
// the stored bitmap, applies itself to it and writes it back with a
// compare-and-swap on the read revision, so replicas sharing the store
// never hand out the same item.
//
// It does what upstream's allocator/storage.Etcd does. That type is built
// only through NewEtcd, which dials etcd from a transport configuration
// (generic.NewRawStorage) and so cannot reach berth's embedded member, which
// has no listener; berth's glue does the same read-modify-write over berth's
// store instead.
type storedRange struct {
	mu       sync.Mutex
	bitmap   *allocator.AllocationBitmap
	store    store.Interface
	key      string
	resource schema.GroupResource
	// last is the revision bitmap reflects: 0 when nothing is stored yet,
	// -1 when the bitmap may hold a change that was never stored.
	last int64
}

var (
	_ allocator.Interface           = (*storedRange)(nil)
	_ rangeallocation.RangeRegistry = (*storedRange)(nil)
)

// storedRangeTimeout bounds one allocation's store round trips: upstream's
// allocator interfaces take no context.
const storedRangeTimeout = 30 * time.Second

// rangeCodec encodes RangeAllocations as kube-apiserver stores them.
var rangeCodec = func() runtime.Codec {
	proto := protobuf.NewSerializer(legacyscheme.Scheme, legacyscheme.Scheme)
	return legacyscheme.Codecs.CodecForVersions(proto, proto, corev1.SchemeGroupVersion, runtime.InternalGroupVersioner)
}()

// storedRangeFactory makes upstream's ip and port allocators keep their
// bitmap at key; made is set to the bitmap made.
func storedRangeFactory(s store.Interface, key string, resource schema.GroupResource, made **storedRange) allocator.AllocatorWithOffsetFactory {
	return func(max int, rangeSpec string, offset int) (allocator.Interface, error) {
		*made = &storedRange{bitmap: allocator.NewAllocationMapWithOffset(max, rangeSpec, offset), store: s, key: key, resource: resource}
		return *made, nil
	}
}

// errNotAllocated stops a write when the bitmap refused the change.
var errNotAllocated = errors.New("not allocated")

// update applies change to the stored bitmap, retrying on a lost race.
func (r *storedRange) update(change func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storedRangeTimeout)
	defer cancel()
	// As upstream's GuaranteedUpdate, a lost race is retried for as long as
	// the deadline allows: each round, some replica's write wins.
	for {
		err := r.tryUpdate(ctx, change)
		if err == nil {
			return nil
		}
		r.last = -1 // the bitmap may hold what was not stored: re-read it
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrAlreadyExists) {
			return err
		}
		if ctx.Err() != nil {
			return apierrors.NewConflict(r.resource, "", err)
		}
	}
}

func (r *storedRange) tryUpdate(ctx context.Context, change func() error) error {
	kv, err := r.store.Get(ctx, r.key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if r.last != 0 { // stored before, or changed without storing: start empty
			spec, _ := r.bitmap.Snapshot()
			if err := r.bitmap.Restore(spec, nil); err != nil {
				return err
			}
			r.last = 0
		}
	case err != nil:
		return fmt.Errorf("reading %s: %w", r.key, err)
	case kv.ModRevision != r.last:
		stored := &api.RangeAllocation{}
		if _, _, err := rangeCodec.Decode(kv.Value, nil, stored); err != nil {
			return fmt.Errorf("decoding %s: %w", r.key, err)
		}
		if err := r.bitmap.Restore(stored.Range, stored.Data); err != nil {
			return fmt.Errorf("%s holds range %q: %w", r.key, stored.Range, err)
		}
		r.last = kv.ModRevision
	}
	if err := change(); err != nil {
		return err
	}
	spec, data := r.bitmap.Snapshot()
	value, err := runtime.Encode(rangeCodec, &api.RangeAllocation{Range: spec, Data: data})
	if err != nil {
		return err
	}
	var rev int64
	if kv.ModRevision == 0 {
		rev, err = r.store.Create(ctx, r.key, value)
	} else {
		rev, err = r.store.Update(ctx, r.key, kv.ModRevision, value)
	}
	if err != nil {
		return err
	}
	r.last = rev
	return nil
}

// Allocate implements allocator.Interface.
func (r *storedRange) Allocate(offset int) (bool, error) {
	err := r.update(func() error {
		ok, err := r.bitmap.Allocate(offset)
		if err == nil && !ok {
			err = errNotAllocated
		}
		return err
	})
	if errors.Is(err, errNotAllocated) {
		return false, nil
	}
	return err == nil, err
}

// AllocateNext implements allocator.Interface.
func (r *storedRange) AllocateNext() (int, bool, error) {
	var offset int
	err := r.update(func() error {
		var ok bool
		var err error
		offset, ok, err = r.bitmap.AllocateNext()
		if err == nil && !ok {
			err = errNotAllocated
		}
		return err
	})
	if errors.Is(err, errNotAllocated) {
		return 0, false, nil
	}
	return offset, err == nil, err
}

// Release implements allocator.Interface.
func (r *storedRange) Release(offset int) error {
	return r.update(func() error { return r.bitmap.Release(offset) })
}

// ForEach, Has and Free answer from the last bitmap read, as upstream's do.
func (r *storedRange) ForEach(fn func(int)) { r.bitmap.ForEach(fn) }
func (r *storedRange) Has(offset int) bool  { return r.bitmap.Has(offset) }
func (r *storedRange) Free() int            { return r.bitmap.Free() }
func (r *storedRange) Destroy()             {}

// Get implements rangeallocation.RangeRegistry for upstream's repair
// controllers: the stored bitmap, with its revision as resourceVersion, or
// an empty one when none is stored yet.
func (r *storedRange) Get() (*api.RangeAllocation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storedRangeTimeout)
	defer cancel()
	kv, err := r.store.Get(ctx, r.key)
	if errors.Is(err, store.ErrNotFound) {
		return &api.RangeAllocation{}, nil
	}
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading %s: %w", r.key, err))
	}
	stored := &api.RangeAllocation{}
	if _, _, err := rangeCodec.Decode(kv.Value, nil, stored); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("decoding %s: %w", r.key, err))
	}
	stored.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return stored, nil
}

// CreateOrUpdate implements rangeallocation.RangeRegistry: it stores
// snapshot if the stored bitmap is still the one read at its
// resourceVersion (or, without one, if none is stored), as upstream's
// allocator/storage.Etcd does, and answers a Conflict otherwise.
func (r *storedRange) CreateOrUpdate(snapshot *api.RangeAllocation) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storedRangeTimeout)
	defer cancel()
	toStore := snapshot.DeepCopy()
	toStore.ResourceVersion = ""
	value, err := runtime.Encode(rangeCodec, toStore)
	if err != nil {
		return err
	}
	var rev int64
	if snapshot.ResourceVersion == "" {
		rev, err = r.store.Create(ctx, r.key, value)
	} else {
		expected, perr := strconv.ParseInt(snapshot.ResourceVersion, 10, 64)
		if perr != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("resourceVersion %q: %v", snapshot.ResourceVersion, perr))
		}
		rev, err = r.store.Update(ctx, r.key, expected, value)
	}
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrAlreadyExists) || errors.Is(err, store.ErrNotFound) {
		return apierrors.NewConflict(r.resource, "", errors.New("the stored allocation changed since it was read"))
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("writing %s: %w", r.key, err))
	}
	if err := r.bitmap.Restore(snapshot.Range, snapshot.Data); err != nil {
		r.last = 0
		return err
	}
	r.last = rev
	return nil
}
