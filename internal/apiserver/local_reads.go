package apiserver

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/watchcache"
)

// LocalReads lists and watches collections straight from the server's
// readers (the watch cache) for the server's own control loops. Over the
// in-process HTTP client every pod event was encoded, written, read and
// decoded once per loop (scheduler, node lifecycle, the Node authorizer's
// graph), and each loop's informer held its own fully decoded copy of
// every pod. Here a loop gets the cache's own objects, neither copied nor
// wrapped, so an informer that keeps whole objects costs a pointer per
// object. They must only be read, as client-go asks of every informer's
// objects anyway; informers over them must not transform them in place
// (informeropts.ReadThrough drops the factory's transform).
//
// A loop gets a collection only if the authorizer lets its user list and
// watch it in every namespace, so it holds no power it would not have over
// HTTPS. New fills it before it returns; it is only read after that.
type LocalReads struct {
	authorizer authorizer.Authorizer
	readers    map[schema.GroupVersionResource]localReader
}

type localReader struct {
	reader collectionReader
	// view is partialMetadata for metadata informers; nil: objects as cached.
	view func(runtime.Object) runtime.Object
}

// NewLocalReads returns an empty set, for Config.LocalReads.
func NewLocalReads() *LocalReads {
	return &LocalReads{readers: map[schema.GroupVersionResource]localReader{}}
}

func (l *LocalReads) add(res *resource, reader collectionReader) {
	l.readers[res.gvr] = localReader{reader: reader}
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
	if metadata {
		r.view = partialMetadata
	}
	return &cache.ListWatch{ListWithContextFunc: r.list, WatchFuncWithContext: r.watch}, nil
}

func (r localReader) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	label, field, err := parseSelectors(opts)
	if err != nil {
		return nil, err
	}
	page, err := r.reader.List(ctx, watchcache.ListOptions{
		Label: label, Field: field,
		ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: string(opts.ResourceVersionMatch),
		Limit: opts.Limit, Continue: opts.Continue,
	})
	if err != nil {
		return nil, err
	}
	// An untyped list: a typed one would copy every item into its Items,
	// and a reflector copies each typed item once more.
	list := &metainternalversion.List{Items: viewObjects(r.view, page.Objects)}
	list.ResourceVersion = strconv.FormatInt(page.Revision, 10)
	list.Continue = page.Continue
	list.RemainingItemCount = page.RemainingItemCount
	return list, nil
}

func (r localReader) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	label, field, err := parseSelectors(opts)
	if err != nil {
		return nil, err
	}
	// The cache's own objects, unencoded: informers only read them.
	w, err := r.reader.Watch(ctx, watchcache.WatchOptions{
		Label: label, Field: field,
		ResourceVersion: opts.ResourceVersion, SendInitialEvents: opts.SendInitialEvents,
		AllowBookmarks: opts.AllowWatchBookmarks, View: r.view,
	})
	if err != nil || r.view == nil {
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
