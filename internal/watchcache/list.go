package watchcache

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// continueToken matches kube-apiserver's shape: the revision the first page
// was read at and the key (relative to the prefix) to resume from.
type continueToken struct {
	APIVersion string `json:"v"`
	RV         int64  `json:"rv"`
	Start      string `json:"start"`
}

const continueTokenVersion = "meta.k8s.io/v1"

func encodeContinue(rv int64, nextKey string) (string, error) {
	b, err := json.Marshal(continueToken{APIVersion: continueTokenVersion, RV: rv, Start: nextKey})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func decodeContinue(s string) (continueToken, error) {
	var tok continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &tok)
	}
	if err != nil || tok.APIVersion != continueTokenVersion || tok.RV <= 0 || tok.Start == "" {
		return continueToken{}, errBadRequest("continue key is not valid")
	}
	return tok, nil
}

// List returns the matching objects (shared: do not modify them), the
// revision they reflect and a continue token when Limit cut the page short.
func (c *Cache) List(ctx context.Context, opts ListOptions) ([]runtime.Object, int64, string, error) {
	snap, rv, start, err := c.listState(ctx, opts)
	if err != nil {
		return nil, 0, "", err
	}
	f := newFilter(opts.Namespace, opts.Label, opts.Field)
	lo, hi := c.keyRange(opts.Namespace)
	if start < lo {
		start = lo
	}
	var objs []runtime.Object
	var next string
	snap.AscendGreaterOrEqual(&entry{key: start}, func(e *entry) bool {
		if hi != "" && e.key >= hi {
			return false
		}
		if opts.Limit > 0 && int64(len(objs)) == opts.Limit {
			next = e.key // another key remains: the page is cut short here
			return false
		}
		if f.matches(e) {
			objs = append(objs, e.obj)
		}
		return true
	})
	if next == "" {
		return objs, rv, "", nil
	}
	token, err := encodeContinue(rv, strings.TrimPrefix(next, c.cfg.Prefix))
	if err != nil {
		return nil, 0, "", apierrors.NewInternalError(err)
	}
	return objs, rv, token, nil
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

// continueState resumes a paginated list at its token's revision.
func (c *Cache) continueState(ctx context.Context, opts ListOptions) (*tree, int64, string, error) {
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		return nil, 0, "", errBadRequest("specifying resource version is not allowed when using continue")
	}
	tok, err := decodeContinue(opts.Continue)
	if err != nil {
		return nil, 0, "", err
	}
	snap, err := c.snapshotAt(ctx, tok.RV)
	if err != nil {
		return nil, 0, "", apierrors.NewResourceExpired("the provided continue parameter is too old; re-list without it")
	}
	return snap, tok.RV, c.cfg.Prefix + tok.Start, nil
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
	c.mu.RLock()
	defer c.mu.RUnlock()
	if rv == c.rv {
		return c.snap, nil
	}
	snap := c.history.snapshotAt(rv)
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
