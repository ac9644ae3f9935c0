package apiserver

import (
	"context"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/berth/berth/internal/watchcache"
)

// NewList implements rest.Lister.
func (r *resourceREST) NewList() runtime.Object { return r.res.newList() }

// List implements rest.Lister from the collection reader.
func (r *resourceREST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	if options == nil {
		options = &metainternalversion.ListOptions{}
	}
	page, err := r.reader.List(ctx, watchcache.ListOptions{
		Namespace:            genericapirequest.NamespaceValue(ctx),
		Label:                options.LabelSelector,
		Field:                options.FieldSelector,
		ResourceVersion:      options.ResourceVersion,
		ResourceVersionMatch: string(options.ResourceVersionMatch),
		Limit:                options.Limit,
		Continue:             options.Continue,
	})
	if err != nil {
		return nil, err
	}
	objs := viewObjects(r.viewFor(ctx), page.Objects)
	list := r.res.newList()
	if err := meta.SetList(list, objs); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	clearItemKinds(list)
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	listMeta.SetResourceVersion(strconv.FormatInt(page.Revision, 10))
	listMeta.SetContinue(page.Continue)
	listMeta.SetRemainingItemCount(page.RemainingItemCount)
	return list, nil
}

// clearItemKinds empties the apiVersion and kind of a list's items, as
// kube-apiserver's answers have them: its items come out of the conversion
// from internal objects, which carries no type. The items are the list's own
// shallow copies, so the cache's objects keep theirs.
func clearItemKinds(list runtime.Object) {
	_ = meta.EachListItem(list, func(item runtime.Object) error {
		item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return nil
	})
}

// Watch implements rest.Watcher from the collection reader.
func (r *resourceREST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	if options == nil {
		options = &metainternalversion.ListOptions{}
	}
	w, err := r.reader.Watch(ctx, encodedWatch(watchcache.WatchOptions{
		Namespace:         genericapirequest.NamespaceValue(ctx),
		Label:             options.LabelSelector,
		Field:             options.FieldSelector,
		ResourceVersion:   options.ResourceVersion,
		SendInitialEvents: options.SendInitialEvents,
		AllowBookmarks:    options.AllowWatchBookmarks,
		// API priority and fairness holds the watch's seat until then.
		Initialized: func() { utilflowcontrol.WatchInitialized(ctx) },
	}, r.viewFor(ctx)))
	if err != nil {
		return nil, err
	}
	return w, nil
}

// ConvertToTable implements rest.TableConvertor.
func (r *resourceREST) ConvertToTable(ctx context.Context, object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.table.ConvertToTable(ctx, object, tableOptions)
}

// withObjectNamespace scopes ctx to one object's namespace (collection
// operations across namespaces act object by object).
func withObjectNamespace(ctx context.Context, namespace string) context.Context {
	return genericapirequest.WithNamespace(ctx, namespace)
}
