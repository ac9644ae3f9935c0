package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/berth/berth/internal/apiserver/discovery"
)

// emptyCollection is a resource berth serves read-only and always empty:
// kube-scheduler (and tools built for Kubernetes) list and watch it and
// wait for it to sync, but berth has nothing it could hold. Nothing can
// ever be written to it, so it needs no store prefix and no watch cache:
// every revision of it is the empty collection.
type emptyCollection struct {
	res *resource
	// lacks completes "berth has no ...": why the collection is empty.
	lacks string
}

// newOf returns a constructor of empty T objects.
func newOf[T any, PT interface {
	*T
	runtime.Object
}]() func() runtime.Object {
	return func() runtime.Object { return PT(new(T)) }
}

// emptyCollections are the collections kube-scheduler v1.37's DRA
// manager lists and watches that berth does not store (it stores the
// storage.k8s.io kinds the scheduler reads), scoped and short-named as
// upstream. Where each comes from in k8s.io/kubernetes/pkg/scheduler:
//   - resourceclaims, resourceslices, devicetaintrules: scheduler.go's DRA
//     set-up (DynamicResourceAllocation is locked on; DRADeviceTaintRules is
//     on by default in 1.37);
//   - deviceclasses: the DRA manager's lister (dynamicresources/dra_manager.go)
//     and eventhandlers.go (DeviceClass events).
//
// PodGroups and CompositePodGroups (scheduling.k8s.io) are watched only
// with the GenericWorkload gate, off by default in 1.37.
func emptyCollections() []emptyCollection {
	const dra = "dynamic resource allocation"
	dynamic := resourcev1.SchemeGroupVersion
	empty := func(gvr schema.GroupVersionResource, kind string, namespaced bool, newObj, newList func() runtime.Object, lacks string, shortNames ...string) emptyCollection {
		return emptyCollection{lacks: lacks, res: &resource{gvr: gvr, kind: kind, singular: strings.ToLower(kind), shortNames: shortNames,
			namespaced: namespaced, newObj: newObj, newList: newList}}
	}
	return []emptyCollection{
		empty(dynamic.WithResource("deviceclasses"), "DeviceClass", false,
			newOf[resourcev1.DeviceClass](), newOf[resourcev1.DeviceClassList](), dra),
		empty(dynamic.WithResource("devicetaintrules"), "DeviceTaintRule", false,
			newOf[resourcev1.DeviceTaintRule](), newOf[resourcev1.DeviceTaintRuleList](), dra),
		empty(dynamic.WithResource("resourceclaims"), "ResourceClaim", true,
			newOf[resourcev1.ResourceClaim](), newOf[resourcev1.ResourceClaimList](), dra),
		empty(dynamic.WithResource("resourceslices"), "ResourceSlice", false,
			newOf[resourcev1.ResourceSlice](), newOf[resourcev1.ResourceSliceList](), dra),
	}
}

// readVerbs are the only verbs an empty collection serves.
var readVerbs = []string{"get", "list", "watch"}

// writeVerbs are the verbs it refuses, with 405 MethodNotAllowed.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// describe lists the empty collections for discovery, which advertises
// readVerbs only, and for OpenAPI, which also describes the refused writes:
// kubectl looks for a PATCH operation to learn that the server validates
// fields, and without one falls back to checks that need CRDs, so
// `kubectl create -f` would fail before the server could say why.
func describe(collections []emptyCollection, verbs []string) []discovery.Resource {
	out := make([]discovery.Resource, 0, len(collections))
	for _, c := range collections {
		out = append(out, discovery.Resource{Group: c.res.gvr.Group, Version: c.res.gvr.Version, Resource: c.res.gvr.Resource,
			Kind: c.res.kind, SingularName: c.res.singular, Namespaced: c.res.namespaced, Verbs: verbs,
			ShortNames: c.res.shortNames})
	}
	return out
}

// readOnlyError is the 405 every write to c answers.
func (c emptyCollection) readOnlyError(verb string) error {
	gr := c.res.gvr.GroupResource()
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource},
		Message: fmt.Sprintf("%s is not allowed: berth serves %s read-only and always empty, because berth has no %s "+
			"(it is served so that schedulers and tools built for Kubernetes run unchanged)", verb, gr, c.lacks),
	}}
}

// addEmptyCollections serves every empty collection: get answers 404,
// list an empty list at the store's current revision, watch stays open
// with no events, and every write is refused without reading the store.
func (a *apiSet) addEmptyCollections(f *scopeFactory, collections []emptyCollection, revision func(context.Context) (int64, error), table rest.TableConvertor) error {
	for _, c := range collections {
		r := &emptyREST{c: c, revision: revision, table: table}
		scope, err := f.scope(c.res, c.res.gvk(), "", r)
		if err != nil {
			return err
		}
		list := handlers.ListResource(r, r, scope, false, f.minRequestTimeout)
		verbs := map[string]http.Handler{"get": handlers.GetResource(r, scope), "list": list, "watch": withoutWatchCompression(list)}
		gv := c.res.gvr.GroupVersion()
		refuse := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			info, _ := request.RequestInfoFrom(req.Context()) // routing found this handler through it
			a.writeError(c.readOnlyError(info.Verb), gv, w, req)
		})
		for _, verb := range writeVerbs {
			verbs[verb] = refuse
		}
		a.endpoints[endpointKey{c.res.gvr.Group, c.res.gvr.Version, c.res.gvr.Resource, ""}] = &endpoint{
			namespaced: c.res.namespaced, groupRes: c.res.gvr.GroupResource(), verbs: verbs}
	}
	return nil
}

// emptyREST reads an empty collection. Since the collection never
// changed, it is empty at every revision the store has reached: any such
// resourceVersion is valid to list at or to watch from.
type emptyREST struct {
	c        emptyCollection
	revision func(context.Context) (int64, error)
	table    rest.TableConvertor
}

// Get implements rest.Getter: there is never an object.
func (r *emptyREST) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	return nil, apierrors.NewNotFound(r.c.res.gvr.GroupResource(), name)
}

// NewList implements rest.Lister.
func (r *emptyREST) NewList() runtime.Object { return r.c.res.newList() }

// List implements rest.Lister: an empty list at the revision asked for (an
// exact match) or else the current one.
func (r *emptyREST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	if options == nil {
		options = &metainternalversion.ListOptions{}
	}
	if options.Continue != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token %q: %s is always empty and has no further pages", options.Continue, r.c.res.gvr.GroupResource()))
	}
	rev, err := r.at(ctx, options.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if options.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
		rev, _ = strconv.ParseInt(options.ResourceVersion, 10, 64) // at checked it
	}
	list := r.c.res.newList()
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	listMeta.SetResourceVersion(strconv.FormatInt(rev, 10))
	return list, nil
}

// Watch implements rest.Watcher: a stream that stays open and sends
// nothing (the request's timeout or the client going ends it), except the
// bookmark that ends a watch-list's (empty) initial events.
func (r *emptyREST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	if options == nil {
		options = &metainternalversion.ListOptions{}
	}
	rev, err := r.at(ctx, options.ResourceVersion)
	if err != nil {
		return nil, err
	}
	events := make(chan watch.Event, 1)
	if options.SendInitialEvents != nil && *options.SendInitialEvents && options.AllowWatchBookmarks {
		bookmark := r.c.res.newObj()
		accessor, err := meta.Accessor(bookmark)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
		accessor.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		events <- watch.Event{Type: watch.Bookmark, Object: bookmark}
	}
	return watch.NewProxyWatcher(events), nil // never closed: the handler ends the watch
}

// at checks a requested resourceVersion against the store and returns the
// current revision: "" and "0" mean now; a revision the store has not
// reached is kube-apiserver's 504 "Too large resource version", which
// client-go retries.
func (r *emptyREST) at(ctx context.Context, resourceVersion string) (int64, error) {
	var asked int64
	if resourceVersion != "" {
		var err error
		if asked, err = strconv.ParseInt(resourceVersion, 10, 64); err != nil || asked < 0 {
			return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", resourceVersion))
		}
	}
	current, err := r.revision(ctx)
	if err != nil {
		return 0, apierrors.NewInternalError(fmt.Errorf("reading the store's revision: %w", err))
	}
	if asked > current {
		return 0, apistorage.NewTooLargeResourceVersionError(uint64(asked), uint64(current), 1)
	}
	return current, nil
}

// ConvertToTable implements rest.TableConvertor.
func (r *emptyREST) ConvertToTable(ctx context.Context, object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.table.ConvertToTable(ctx, object, tableOptions)
}
