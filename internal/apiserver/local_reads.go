package apiserver

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// HTTPS. New fills it before it returns; it is only read after that.
type LocalReads struct {
	authorizer authorizer.Authorizer
	readers    map[schema.GroupVersionResource]localReader
}

type localReader struct {
	reader  collectionReader
	newList func() runtime.Object
	// metadata: objects as PartialObjectMetadata, for metadata informers.
	metadata bool
}

// NewLocalReads returns an empty set, for Config.LocalReads.
func NewLocalReads() *LocalReads {
	return &LocalReads{readers: map[schema.GroupVersionResource]localReader{}}
}

func (l *LocalReads) add(res *resource, reader collectionReader) {
	l.readers[res.gvr] = localReader{reader: reader, newList: res.newList}
}

// ListWatch is a client-go ListerWatcher of gvr in all namespaces for u.
// It fails if the server does not serve gvr or u may not list and watch it.
func (l *LocalReads) ListWatch(ctx context.Context, u user.Info, gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
	return l.listWatch(ctx, u, gvr, false)
}

// MetadataListWatch is ListWatch for metadata informers (client-go's
// metadatainformer, the garbage collector's): every object, list item and
// bookmark as a PartialObjectMetadata, as the metadata client reads them.
func (l *LocalReads) MetadataListWatch(ctx context.Context, u user.Info, gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
	return l.listWatch(ctx, u, gvr, true)
}

func (l *LocalReads) listWatch(ctx context.Context, u user.Info, gvr schema.GroupVersionResource, metadata bool) (cache.ListerWatcher, error) {
	r, ok := l.readers[gvr]
	if !ok {
		return nil, fmt.Errorf("local reads: %s is not served", gvr)
	}
	for _, verb := range []string{"list", "watch"} {
		decision, reason, err := l.authorizer.Authorize(ctx, authorizer.AttributesRecord{
			User: u, Verb: verb, APIGroup: gvr.Group, APIVersion: gvr.Version, Resource: gvr.Resource,
			ResourceRequest: true,
		})
		if err != nil || decision != authorizer.DecisionAllow {
			return nil, fmt.Errorf("local reads: %s may not %s %s: %s %v", u.GetName(), verb, gvr.Resource, reason, err)
		}
	}
	r.metadata = metadata
	return &cache.ListWatch{ListWithContextFunc: r.list, WatchFuncWithContext: r.watch}, nil
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
	var list runtime.Object
	if r.metadata {
		list, objs = metadataList(objs)
	} else {
		list = r.newList()
	}
	// fillList copies each object's top-level struct into the typed list.
	if err := fillList(list, objs, rev, cont); err != nil {
		return nil, err
	}
	return list, nil
}

func (r localReader) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	label, field, err := parseSelectors(opts)
	if err != nil {
		return nil, err
	}
	// A view, even the identity, gets each watcher its own shallow copies
	// rather than the cache's objects wrapped for shared encoding.
	view := func(obj runtime.Object) runtime.Object { return obj }
	if r.metadata {
		view = partialMetadata
	}
	w, err := r.reader.Watch(ctx, watchQuery{
		Label: label, Field: field,
		ResourceVersion: opts.ResourceVersion, SendInitialEvents: opts.SendInitialEvents,
		AllowBookmarks: opts.AllowWatchBookmarks, View: view,
	})
	if err != nil || !r.metadata {
		return w, err
	}
	// Views do not see bookmarks, but a reflector drops events of another
	// type than its informer's, and watch-list's end of initial events is
	// a bookmark.
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type == watch.Bookmark {
			e.Object = partialMetadata(e.Object)
		}
		return e, true
	}), nil
}

var partialMetadataType = metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadata"}

// partialMetadata is obj's metadata (nested fields shared with obj).
func partialMetadata(obj runtime.Object) runtime.Object {
	if m, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if om, ok := m.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return &metav1.PartialObjectMetadata{TypeMeta: partialMetadataType, ObjectMeta: *om}
		}
	}
	return obj
}

// metadataList is an empty list for objs' metadata, and that metadata.
func metadataList(objs []runtime.Object) (*metav1.PartialObjectMetadataList, []runtime.Object) {
	items := make([]runtime.Object, len(objs))
	for i, obj := range objs {
		items[i] = partialMetadata(obj)
	}
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: partialMetadataType.APIVersion, Kind: "PartialObjectMetadataList"}}
	return list, items
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
