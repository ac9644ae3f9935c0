package apiserver

import (
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// endpointKey addresses one resource or subresource.
type endpointKey struct {
	group, version, resource, subresource string
}

// endpoint maps request verbs (as RequestInfo names them) to handlers.
type endpoint struct {
	namespaced bool
	groupRes   schema.GroupResource
	verbs      map[string]http.Handler
}

// scopeFactory builds k8s.io/apiserver RequestScopes: everything the
// upstream handlers need to decode, default, convert, patch and encode.
type scopeFactory struct {
	codecs            codecs
	authorizer        authorizer.Authorizer
	admit             admission.Interface
	maxBody           int64
	minRequestTimeout time.Duration
	equivalent        runtime.EquivalentResourceRegistry
	// typeConverter knows the OpenAPI schemas (list keys, maps) that
	// server-side apply and managedFields need.
	typeConverter managedfields.TypeConverter
}

func (f *scopeFactory) scope(res *resource, kind schema.GroupVersionKind, subresource string, table rest.TableConvertor) (*handlers.RequestScope, error) {
	s := f.codecs.scheme
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	if kind == res.gvk() {
		reset = resetFieldsOf(res, subresource)
	}
	fieldManager, err := newFieldManager(f.typeConverter, s, kind, subresource, reset)
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", kind, err)
	}
	return &handlers.RequestScope{
		Namer:                    handlers.ContextBasedNaming{Namer: meta.NewAccessor(), ClusterScoped: !res.namespaced},
		Serializer:               f.codecs.negotiated,
		ParameterCodec:           runtime.NewParameterCodec(s),
		Creater:                  s,
		Convertor:                s,
		Defaulter:                s,
		Typer:                    s,
		UnsafeConvertor:          runtime.UnsafeObjectConvertor(s),
		Authorizer:               f.authorizer,
		EquivalentResourceMapper: f.equivalent,
		TableConvertor:           table,
		FieldManager:             fieldManager,
		Resource:                 res.gvr,
		Kind:                     kind,
		Subresource:              subresource,
		MetaGroupVersion:         metav1.SchemeGroupVersion,
		HubGroupVersion:          kind.GroupVersion(),
		MaxRequestBodyBytes:      f.maxBody,
	}, nil
}

// patchTypes are the patch content types every resource accepts.
func patchTypes() []string {
	return []string{
		string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType),
		string(types.ApplyYAMLPatchType), string(types.ApplyCBORPatchType),
	}
}

// mainEndpoint serves the resource itself.
// fullREST is everything the main endpoint of a resource serves.
type fullREST interface {
	rest.Getter
	rest.Lister
	rest.Watcher
	rest.Creater
	rest.Updater
	rest.GracefulDeleter
	rest.CollectionDeleter
	rest.TableConvertor
}

// mainEndpoint serves the resource itself through r.
func (f *scopeFactory) mainEndpoint(res *resource, r fullREST) (*endpoint, error) {
	scope, err := f.scope(res, res.gvk(), "", r)
	if err != nil {
		return nil, err
	}
	list := handlers.ListResource(r, r, scope, false, f.minRequestTimeout)
	return &endpoint{namespaced: res.namespaced, groupRes: res.gvr.GroupResource(), verbs: map[string]http.Handler{
		"get":              handlers.GetResource(r, scope),
		"list":             list,
		"watch":            withoutWatchCompression(list),
		"create":           perRequest(func() http.Handler { return handlers.CreateResource(r, scope, f.admit) }),
		"update":           perRequest(func() http.Handler { return handlers.UpdateResource(r, scope, f.admit) }),
		"patch":            perRequest(func() http.Handler { return handlers.PatchResource(r, scope, f.admit, patchTypes()) }),
		"delete":           perRequest(func() http.Handler { return handlers.DeleteResource(r, true, scope, f.admit) }),
		"deletecollection": perRequest(func() http.Handler { return handlers.DeleteCollection(r, true, scope, f.admit) }),
	}}, nil
}

// statusEndpoint serves a subresource that reads the whole object and
// writes only part of it (status, approval).
func (f *scopeFactory) statusEndpoint(res *resource, subresource string, r *resourceREST) (*endpoint, error) {
	return f.readWriteEndpoint(res, res.gvk(), subresource, r)
}

// subresourceREST reads and writes one subresource.
type subresourceREST interface {
	rest.Getter
	rest.Updater
	rest.TableConvertor
}

// readWriteEndpoint serves get, update and patch of a subresource whose
// objects are of kind.
func (f *scopeFactory) readWriteEndpoint(res *resource, kind schema.GroupVersionKind, subresource string, r subresourceREST) (*endpoint, error) {
	scope, err := f.scope(res, kind, subresource, r)
	if err != nil {
		return nil, err
	}
	return &endpoint{namespaced: res.namespaced, groupRes: res.gvr.GroupResource(), verbs: map[string]http.Handler{
		"get":    handlers.GetResource(r, scope),
		"update": perRequest(func() http.Handler { return handlers.UpdateResource(r, scope, f.admit) }),
		"patch":  perRequest(func() http.Handler { return handlers.PatchResource(r, scope, f.admit, patchTypes()) }),
	}}, nil
}

// updateEndpoint serves a PUT-only subresource (namespaces/finalize), as upstream.
func (f *scopeFactory) updateEndpoint(res *resource, subresource string, r *resourceREST) (*endpoint, error) {
	scope, err := f.scope(res, res.gvk(), subresource, r)
	if err != nil {
		return nil, err
	}
	return &endpoint{namespaced: res.namespaced, groupRes: res.gvr.GroupResource(), verbs: map[string]http.Handler{
		"update": perRequest(func() http.Handler { return handlers.UpdateResource(r, scope, f.admit) }),
	}}, nil
}

// createEndpoint serves a POST-only subresource (binding, eviction).
func (f *scopeFactory) createEndpoint(res *resource, subresource string, kind schema.GroupVersionKind, r rest.NamedCreater, table rest.TableConvertor) (*endpoint, error) {
	return f.postEndpoint(res, subresource, kind, table, func(scope *handlers.RequestScope) http.Handler {
		return handlers.CreateNamedResource(r, scope, f.admit)
	})
}

// postEndpoint serves only POST, with the handler build makes.
func (f *scopeFactory) postEndpoint(res *resource, subresource string, kind schema.GroupVersionKind, table rest.TableConvertor, build func(*handlers.RequestScope) http.Handler) (*endpoint, error) {
	scope, err := f.scope(res, kind, subresource, table)
	if err != nil {
		return nil, err
	}
	return &endpoint{namespaced: res.namespaced, groupRes: res.gvr.GroupResource(), verbs: map[string]http.Handler{
		"create": perRequest(func() http.Handler { return build(scope) }),
	}}, nil
}

// perRequest builds the handler afresh for every request, as
// kube-apiserver's installer does. The upstream write handlers wrap their
// admission argument (audit, managed-fields validation) by assigning to the
// captured variable on every request: a handler built once and reused grows
// that chain by one link per request, so admission got slower with every
// write (and the shared variable raced).
func perRequest(build func() http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		build().ServeHTTP(w, req)
	})
}
