package watchcache

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/berth/berth/internal/store"
)

// ListResult is one page of a List.
type ListResult struct {
	// Objects are shared: do not modify them.
	Objects []runtime.Object
	// Revision is the revision the page reflects.
	Revision int64
	// Continue is kube-apiserver's continue token when Limit cut the page
	// short.
	Continue string
	// RemainingItemCount is how many objects follow the page, set as
	// kube-apiserver sets it: only for a page cut short by a list without
	// selectors.
	RemainingItemCount *int64
}

// List returns the matching objects and the revision they reflect, paged
// by Limit with kube-apiserver's continue tokens.
func (c *Cache) List(ctx context.Context, opts ListOptions) (ListResult, error) {
	snap, rv, start, err := c.listState(ctx, opts)
	if err != nil {
		return ListResult{}, err
	}
	f := newFilter(opts.Namespace, opts.Label, opts.Field)
	lo, hi := c.keyRange(opts.Namespace)
	if start < lo {
		start = lo
	}
	unselected := opts.Unselected()
	var objs []runtime.Object
	var next string
	var remaining int64
	snap.AscendGreaterOrEqual(&entry{key: start}, func(e *entry) bool {
		if hi != "" && e.key >= hi {
			return false
		}
		if opts.Limit > 0 && int64(len(objs)) == opts.Limit {
			if next == "" {
				next = e.key // another key remains: the page is cut short here
			}
			// Count what follows only where the count means something.
			remaining++
			return unselected
		}
		if f.matches(e) {
			objs = append(objs, e.obj)
		}
		return true
	})
	if next == "" {
		return ListResult{Objects: objs, Revision: rv}, nil
	}
	token, err := apistorage.EncodeContinue(next, c.cfg.Prefix, rv)
	if err != nil {
		return ListResult{}, apierrors.NewInternalError(err)
	}
	res := ListResult{Objects: objs, Revision: rv, Continue: token}
	if unselected {
		res.RemainingItemCount = &remaining
	}
	return res, nil
}

// Unselected reports whether opts has no label or field selector: only
// then does kube-apiserver count the items after a page.
func (opts ListOptions) Unselected() bool {
	return (opts.Label == nil || opts.Label.Empty()) && (opts.Field == nil || opts.Field.Empty())
}

// listState picks the snapshot a List reads, its revision and the first key.
func (c *Cache) listState(ctx context.Context, opts ListOptions) (*tree, int64, string, error) {
	if opts.Continue != "" {
		return c.continueState(ctx, opts)
	}
	switch opts.ResourceVersionMatch {
	case "Exact":
		return c.exactState(ctx, opts)
	case "", "NotOlderThan":
	default:
		return nil, 0, "", errBadRequest("unknown resourceVersionMatch %q", opts.ResourceVersionMatch)
	}
	if err := c.waitForList(ctx, opts); err != nil {
		return nil, 0, "", err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.snap, c.rv, c.cfg.Prefix, nil
}

// continueState resumes a paginated list at its token's revision. A
// token whose revision the cache no longer holds gets kube-apiserver's 410
// carrying a token that resumes at the same key from the latest state; such
// a token (revision -1) reads the latest state.
func (c *Cache) continueState(ctx context.Context, opts ListOptions) (*tree, int64, string, error) {
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		return nil, 0, "", errBadRequest("specifying resource version is not allowed when using continue")
	}
	key, rv, err := apistorage.DecodeContinue(opts.Continue, c.cfg.Prefix)
	if err != nil {
		return nil, 0, "", errBadRequest("invalid continue token: %v", err)
	}
	if rv < 0 {
		if err := c.waitConsistent(ctx); err != nil {
			return nil, 0, "", err
		}
		c.mu.RLock()
		defer c.mu.RUnlock()
		return c.snap, c.rv, key, nil
	}
	snap, err := c.snapshotAt(ctx, rv)
	if err != nil {
		if !apierrors.IsResourceExpired(err) {
			return nil, 0, "", err
		}
		return nil, 0, "", InconsistentContinue(key, c.cfg.Prefix)
	}
	return snap, rv, key, nil
}

// exactState serves resourceVersionMatch=Exact from history.
func (c *Cache) exactState(ctx context.Context, opts ListOptions) (*tree, int64, string, error) {
	if opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
		return nil, 0, "", errBadRequest("resourceVersionMatch %q needs a resourceVersion above 0", opts.ResourceVersionMatch)
	}
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, 0, "", err
	}
	snap, err := c.snapshotAt(ctx, rv)
	return snap, rv, c.cfg.Prefix, err
}

// waitForList waits until the cache may serve a list at opts.ResourceVersion
// from its current state: "" consistent, "0" any, N not older than N.
func (c *Cache) waitForList(ctx context.Context, opts ListOptions) error {
	switch opts.ResourceVersion {
	case "":
		if opts.ResourceVersionMatch != "" {
			return errBadRequest("resourceVersionMatch needs a resourceVersion")
		}
		return c.waitConsistent(ctx)
	case "0":
		return c.waitFresh(ctx, 0, false)
	}
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return err
	}
	return c.waitFresh(ctx, rv, false)
}

// snapshotAt returns the state at exactly rv, waiting if rv is ahead of the
// cache and failing with 410 if it is older than the history.
func (c *Cache) snapshotAt(ctx context.Context, rv int64) (*tree, error) {
	if err := c.waitFresh(ctx, rv, false); err != nil {
		return nil, err
	}
	// As kube-apiserver's cache: a revision the store compacted away is
	// gone even where the cache's history still holds it.
	if t, ok := c.cfg.Store.(store.CompactionTracker); ok {
		if compacted := t.CompactedRevision(); rv < compacted {
			return nil, errTooOld(rv, compacted)
		}
	}
	c.mu.RLock()
	snap, ok := c.snap, rv == c.rv
	if !ok {
		snap, ok = c.history.keptSnapshotAt(rv)
	}
	c.mu.RUnlock()
	if ok {
		return snap, nil
	}
	c.mu.Lock() // history rebuilds states between its snapshots
	defer c.mu.Unlock()
	if rv == c.rv {
		return c.snap, nil
	}
	snap = c.history.snapshotAt(rv)
	if snap == nil {
		return nil, errTooOld(rv, c.history.baseRV)
	}
	return snap, nil
}

// keyRange bounds the keys of one namespace ("" = all); hi "" means no bound.
func (c *Cache) keyRange(namespace string) (lo, hi string) {
	if namespace == "" {
		return c.cfg.Prefix, ""
	}
	lo = c.cfg.Prefix + namespace + "/"
	return lo, c.cfg.Prefix + namespace + "0" // '0' follows '/'
}

// Get returns the object stored at key (the full store key, shared: do not
// modify it) once the cache has reached minRV, with the cache's revision.
func (c *Cache) Get(ctx context.Context, key string, minRV int64) (runtime.Object, int64, error) {
	if err := c.waitFresh(ctx, minRV, false); err != nil {
		return nil, 0, err
	}
	c.mu.RLock()
	snap, rv := c.snap, c.rv
	c.mu.RUnlock()
	e, ok := snap.Get(&entry{key: key})
	if !ok {
		return nil, rv, apierrors.NewNotFound(c.cfg.Resource, key[strings.LastIndex(key, "/")+1:])
	}
	return e.obj, rv, nil
}
