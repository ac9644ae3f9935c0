package apiserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/watchcache"
)

// storeReader reads collections straight from the store: consistent, but
// every LIST and WATCH costs the store a range read or a watch. It serves
// the resources kept out of the watch cache (events), the consistent LISTs
// a cache cannot serve in time, and is the reference the cache is tested
// against.
type storeReader struct {
	spec readerSpec
	// count is the resource's object count, -1 until first counted; only
	// readers made by newStoreReader keep it.
	count atomic.Int64
}

// newStoreReader makes a reader that also counts the resource's objects
// until ctx ends.
func newStoreReader(ctx context.Context, spec readerSpec) (collectionReader, error) {
	r := &storeReader{spec: spec}
	r.count.Store(-1)
	go utilwait.UntilWithContext(ctx, r.recount, objectCountPeriod)
	return r, nil
}

func (r *storeReader) Get(ctx context.Context, key string, _ int64) (runtime.Object, int64, error) {
	kv, err := r.spec.Store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, apierrors.NewNotFound(r.spec.Resource, key[strings.LastIndex(key, "/")+1:])
	}
	if err != nil {
		return nil, 0, apierrors.NewInternalError(err)
	}
	obj, err := r.spec.Decode(kv)
	if err != nil {
		return nil, 0, apierrors.NewInternalError(err)
	}
	return obj, kv.ModRevision, nil
}

// listPageSize is how many keys one store range read fetches while filling
// a page whose selectors skip some objects.
const listPageSize = 500

func (r *storeReader) List(ctx context.Context, q watchcache.ListOptions) (watchcache.ListResult, error) {
	prefix := r.spec.Prefix
	if q.Namespace != "" {
		prefix += q.Namespace + "/"
	}
	startKey, rev, err := r.listStart(q)
	if err != nil {
		return watchcache.ListResult{}, err
	}
	var out []runtime.Object
	for {
		page, err := r.spec.Store.List(ctx, prefix, store.ListOptions{Revision: rev, Limit: listPageSize, StartKey: startKey})
		if err != nil {
			return watchcache.ListResult{}, r.listError(err, q, startKey)
		}
		rev = page.Revision
		for i, kv := range page.KVs {
			obj, err := r.spec.Decode(kv)
			if err != nil {
				return watchcache.ListResult{}, apierrors.NewInternalError(err)
			}
			if ok, err := r.matches(obj, q.Label, q.Field); err != nil {
				return watchcache.ListResult{}, err
			} else if !ok {
				continue
			}
			out = append(out, obj)
			if q.Limit > 0 && int64(len(out)) == q.Limit && (i < len(page.KVs)-1 || page.More) {
				token, err := apistorage.EncodeContinue(kv.Key+"\x00", r.spec.Prefix, rev)
				if err != nil {
					return watchcache.ListResult{}, apierrors.NewInternalError(err)
				}
				res := watchcache.ListResult{Objects: out, Revision: rev, Continue: token}
				if q.Unselected() {
					// Without selectors every key read so far was returned.
					remaining := page.Count - int64(i+1)
					res.RemainingItemCount = &remaining
				}
				return res, nil
			}
		}
		if !page.More || len(page.KVs) == 0 {
			return watchcache.ListResult{Objects: out, Revision: rev}, nil
		}
		startKey = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
}

// listStart interprets continue and resourceVersion: a continue token pins
// the revision of the first page; an Exact match pins the named revision;
// anything else reads the latest (which is never older than what was asked).
func (r *storeReader) listStart(q watchcache.ListOptions) (startKey string, rev int64, err error) {
	if q.Continue != "" {
		key, rv, err := apistorage.DecodeContinue(q.Continue, r.spec.Prefix)
		if err != nil {
			return "", 0, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		if rv < 0 { // an inconsistent continuation: the latest state
			rv = 0
		}
		return key, rv, nil
	}
	if q.ResourceVersionMatch == string(metav1.ResourceVersionMatchExact) {
		rv, err := strconv.ParseInt(q.ResourceVersion, 10, 64)
		if err != nil || rv <= 0 {
			return "", 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q for an exact match", q.ResourceVersion))
		}
		return "", rv, nil
	}
	return "", 0, nil
}

// listError is kube-apiserver's answer to a failed list: a revision
// compacted away is 410, and for a continued list the 410 carries a token
// resuming after the same key from the latest state.
func (r *storeReader) listError(err error, q watchcache.ListOptions, startKey string) error {
	if !errors.Is(err, store.ErrCompacted) {
		return apierrors.NewInternalError(err)
	}
	if q.Continue == "" {
		return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	}
	return watchcache.InconsistentContinue(startKey, r.spec.Prefix)
}

func (r *storeReader) matches(obj runtime.Object, label labels.Selector, field fields.Selector) (bool, error) {
	return selectorMatches(r.spec.Attrs, obj, label, field)
}

// selectorMatches evaluates label and field selectors against obj.
func selectorMatches(attrs func(runtime.Object) (labels.Set, fields.Set, error), obj runtime.Object, label labels.Selector, field fields.Selector) (bool, error) {
	if (label == nil || label.Empty()) && (field == nil || field.Empty()) {
		return true, nil
	}
	ls, fs, err := attrs(obj)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if label != nil && !label.Matches(ls) {
		return false, nil
	}
	return field == nil || field.Matches(fs), nil
}
