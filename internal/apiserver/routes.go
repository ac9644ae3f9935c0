package apiserver

import (
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// addEndpoints registers r's resource and its subresources.
func (a *apiSet) addEndpoints(f *scopeFactory, r *resourceREST, all map[string]*resourceREST) error {
	res := r.res
	key := func(sub string) endpointKey {
		return endpointKey{res.gvr.Group, res.gvr.Version, res.gvr.Resource, sub}
	}
	var main fullREST = r
	isNamespaces := res.gvr.Group == "" && res.gvr.Resource == "namespaces"
	switch {
	case isNamespaces:
		main = a.namespaces
	case res.newMain != nil:
		main = res.newMain(r)
	}
	ep, err := f.mainEndpoint(res, main)
	if err != nil {
		return err
	}
	if isNamespaces {
		delete(ep.verbs, "deletecollection") // as upstream
	}
	a.endpoints[key("")] = ep
	for _, sub := range res.subresources {
		switch sub {
		case "status", "approval", "ephemeralcontainers", "resize":
			ep, err = f.statusEndpoint(res, sub, r.forStatus(sub))
		case "finalize":
			ep, err = f.updateEndpoint(res, sub, r.forStatus(sub))
		case "binding":
			// Every write to pods goes through the node accounting from here on.
			acct := newPodAccounting(r.objectStore.store, r.objectStore, all[corev1.SchemeGroupVersion.WithResource("nodes").String()].objectStore)
			r.objectStore.store = acct
			b := &bindingREST{pods: r.objectStore, accounting: acct}
			ep, err = f.createEndpoint(res, sub, corev1.SchemeGroupVersion.WithKind("Binding"), b, r)
			if err == nil {
				a.endpoints[endpointKey{"", "v1", "bindings", ""}], err = f.postEndpoint(res, "", corev1.SchemeGroupVersion.WithKind("Binding"), r,
					func(scope *handlers.RequestScope) http.Handler {
						return handlers.CreateResource(bindingCollection{b}, scope, f.admit)
					})
			}
		case "log", "exec", "attach", "portforward":
			ep, err = a.connector(f, all).endpoint(sub)
		case "token":
			tokens := &tokenREST{serviceAccounts: r, pods: all[corev1.SchemeGroupVersion.WithResource("pods").String()],
				nodes: all[corev1.SchemeGroupVersion.WithResource("nodes").String()], tokens: a.serviceAccountTokens}
			ep, err = f.createEndpoint(res, sub, authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), tokens, r)
		case "proxy":
			ep, err = a.proxyEndpoint(f, r, all)
		case "scale":
			target, ok := scaleTargetFor(res)
			if !ok {
				return fmt.Errorf("resource %s: no scale target", res.gvr)
			}
			ep, err = f.scaleEndpoint(res, &scaleREST{controllers: r, target: target})
		case "eviction":
			ep, err = f.createEndpoint(res, sub, policyv1.SchemeGroupVersion.WithKind("Eviction"), &evictionREST{pods: r, budgets: all[policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets").String()]}, r)
		default:
			return fmt.Errorf("resource %s: no handler for subresource %q", res.gvr, sub)
		}
		if err != nil {
			return err
		}
		a.endpoints[key(sub)] = ep
	}
	return nil
}

// proxyEndpoint builds pods/proxy, services/proxy or nodes/proxy for r.
func (a *apiSet) proxyEndpoint(f *scopeFactory, r *resourceREST, all map[string]*resourceREST) (*endpoint, error) {
	core := corev1.SchemeGroupVersion
	pods := all[core.WithResource("pods").String()].objectStore
	var p *proxyREST
	switch r.res.gvr.Resource {
	case "pods":
		p = podProxy(pods, a.proxyTransport)
	case "services":
		p = serviceProxy(r, all[discoveryv1.SchemeGroupVersion.WithResource("endpointslices").String()], pods, a.proxyTransport)
	case "nodes":
		p = nodeProxy(a.connector(f, all), a.proxyTransport)
	default:
		return nil, fmt.Errorf("resource %s: no proxy", r.res.gvr)
	}
	return f.proxyEndpoint(r.res, p, r)
}

// connector reaches pods' nodes for the connect subresources.
func (a *apiSet) connector(f *scopeFactory, all map[string]*resourceREST) *podConnector {
	return &podConnector{pods: all[corev1.SchemeGroupVersion.WithResource("pods").String()].objectStore,
		nodes:     all[corev1.SchemeGroupVersion.WithResource("nodes").String()].objectStore,
		transport: a.nodeTransport, authorizer: a.authorizer, admission: newConnectAdmission(f.admit, f.codecs.scheme),
		writeError: func(err error, w http.ResponseWriter, req *http.Request) {
			a.writeError(err, corev1.SchemeGroupVersion, w, req)
		}}
}

// ServeHTTP routes /api and /apis: resource requests to their endpoint,
// everything else to discovery.
func (a *apiSet) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	info, ok := request.RequestInfoFrom(req.Context())
	if !ok || !info.IsResourceRequest {
		a.discovery.ServeHTTP(w, req)
		return
	}
	gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	ep, ok := a.endpoints[endpointKey{info.APIGroup, info.APIVersion, info.Resource, info.Subresource}]
	if !ok && a.extensions != nil {
		a.extensions.ServeHTTP(w, req) // CRDs, custom resources, or upstream's 404
		return
	}
	if !ok || !ep.scopeMatches(info) {
		a.writeError(apierrors.NewNotFound(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Name), gv, w, req)
		return
	}
	h, ok := ep.verbs[info.Verb]
	if !ok {
		a.writeError(apierrors.NewMethodNotSupported(ep.groupRes, info.Verb), gv, w, req)
		return
	}
	h.ServeHTTP(w, req)
}

// scopeMatches rejects a namespace on a cluster-scoped resource and a
// missing one on a namespaced resource (except for listing across all).
func (ep *endpoint) scopeMatches(info *request.RequestInfo) bool {
	if !ep.namespaced {
		// RequestInfo names a namespace's own namespace after it.
		return info.Namespace == "" || (info.Resource == "namespaces" && info.APIGroup == "" && info.Namespace == info.Name)
	}
	return info.Namespace != "" || info.Verb == "list" || info.Verb == "watch"
}

func (a *apiSet) writeError(err error, gv schema.GroupVersion, w http.ResponseWriter, req *http.Request) {
	responsewriters.ErrorNegotiated(err, a.codecs.negotiated, gv, w, req)
}

// notFoundHandler answers paths nothing serves, with upstream's Status.
func notFoundHandler(c codecs) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		err := &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: "the server could not find the requested resource",
		}}
		responsewriters.ErrorNegotiated(err, c.negotiated, schema.GroupVersion{Version: "v1"}, w, req)
	})
}

// attrsFunc returns a resource's labels and selectable fields; kinds
// without their own field set select on metadata.name and namespace.
func attrsFunc(res *resource) func(runtime.Object) (labels.Set, fields.Set, error) {
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		accessor, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, err
		}
		if res.rules.fields != nil {
			return accessor.GetLabels(), res.rules.fields(obj), nil
		}
		fs := fields.Set{"metadata.name": accessor.GetName()}
		if res.namespaced {
			fs["metadata.namespace"] = accessor.GetNamespace()
		}
		return accessor.GetLabels(), fs, nil
	}
}
