package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"
)

// LocalReads lists and watches collections straight from the server's
// readers (the watch cache) for the server's own control loops. Over the
// in-process HTTP client every pod event was encoded, written, read and
// decoded once per loop (scheduler, node lifecycle, the Node authorizer's
// graph), and each loop's informer held its own fully decoded copy of
// every pod. Here a loop gets the cache's objects as shallow copies: its
// informer owns the top-level struct (transforms may reset fields of it)
// while everything nested stays shared with the cache and must only be
// read, as client-go asks of every informer's objects anyway.
//
// A loop gets a collection only if the authorizer lets its user list and
// watch it in every namespace, so it holds no power it would not have over
// HTTPS. New fills it; ListWatch is usable once New has returned.
type LocalReads struct {
	mu         sync.Mutex
	authorizer authorizer.Authorizer
	readers    map[schema.GroupVersionResource]localReader
}

type localReader struct {
	reader  collectionReader
	newList func() runtime.Object
}

// NewLocalReads returns an empty set, for Config.LocalReads.
func NewLocalReads() *LocalReads {
	return &LocalReads{readers: map[schema.GroupVersionResource]localReader{}}
}

func (l *LocalReads) add(authz authorizer.Authorizer, res *resource, reader collectionReader) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.authorizer = authz
	l.readers[res.gvr] = localReader{reader: reader, newList: res.newList}
}

// ListWatch is a client-go ListerWatcher of gvr in all namespaces for u.
// It fails if the server does not cache gvr or u may not list and watch it.
func (l *LocalReads) ListWatch(ctx context.Context, u user.Info, gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
	l.mu.Lock()
	r, ok := l.readers[gvr]
	authz := l.authorizer
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("local reads: %s is not served", gvr)
	}
	for _, verb := range []string{"list", "watch"} {
		decision, reason, err := authz.Authorize(ctx, authorizer.AttributesRecord{
			User: u, Verb: verb, APIGroup: gvr.Group, APIVersion: gvr.Version, Resource: gvr.Resource,
			ResourceRequest: true,
		})
		if err != nil || decision != authorizer.DecisionAllow {
			return nil, fmt.Errorf("local reads: %s may not %s %s: %s %v", u.GetName(), verb, gvr.Resource, reason, err)
		}
	}
	return &cache.ListWatch{
		ListWithContextFunc:  r.list,
		WatchFuncWithContext: r.watch,
	}, nil
}

func (r localReader) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	label, field, err := parseSelectors(opts)
	if err != nil {
		return nil, err
	}
	objs, rev, cont, err := r.reader.List(ctx, listQuery{
		Label: label, Field: field,
		ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: string(opts.ResourceVersionMatch),
		Limit: opts.Limit, Continue: opts.Continue,
	})
	if err != nil {
		return nil, err
	}
	list := r.newList()
	// SetList copies each object's top-level struct into the typed list.
	if err := meta.SetList(list, objs); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	listMeta.SetResourceVersion(strconv.FormatInt(rev, 10))
	listMeta.SetContinue(cont)
	return list, nil
}

func (r localReader) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	label, field, err := parseSelectors(opts)
	if err != nil {
		return nil, err
	}
	return r.reader.Watch(ctx, watchQuery{
		Label: label, Field: field,
		ResourceVersion: opts.ResourceVersion, SendInitialEvents: opts.SendInitialEvents,
		AllowBookmarks: opts.AllowWatchBookmarks,
		// A view, even this one, gets each watcher its own shallow copies
		// rather than the cache's objects wrapped for shared encoding.
		View: func(obj runtime.Object) runtime.Object { return obj },
	})
}

func parseSelectors(opts metav1.ListOptions) (labels.Selector, fields.Selector, error) {
	label, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	field, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	return label, field, nil
}
