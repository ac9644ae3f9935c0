package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	apiproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/capabilities"
	"k8s.io/kubernetes/pkg/registry/core/pod"
)

// proxyMethods are the methods the proxy subresources pass on, as upstream's.
var proxyMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// proxyREST serves pods/proxy, services/proxy and nodes/proxy as
// upstream's ProxyREST types do: the object's location (a pod IP, a ready
// endpoint of the Service, the node's server), the request's sub-path
// joined to it, proxied with URL rewriting and X-Forwarded headers by
// upstream's UpgradeAwareHandler. Upstream's types are bound to its
// generic store and internal options; the locating is upstream's
// (pod.ResourceLocation, RandomEndpoint) where it does not need that store.
type proxyREST struct {
	newOptions func() runtime.Object // the v1 *ProxyOptions
	path       func(opts runtime.Object) string
	locate     func(ctx context.Context, id string) (*url.URL, http.RoundTripper, error)
}

var _ rest.Connecter = (*proxyREST)(nil)

func (p *proxyREST) New() runtime.Object      { return p.newOptions() }
func (p *proxyREST) Destroy()                 {}
func (p *proxyREST) ConnectMethods() []string { return proxyMethods }
func (p *proxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return p.newOptions(), true, "path"
}

func (p *proxyREST) Connect(ctx context.Context, id string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	location, transport, err := p.locate(ctx, id)
	if err != nil {
		return nil, err
	}
	location.Path = utilnet.JoinPreservingTrailingSlash(location.Path, p.path(opts))
	h := proxy.NewUpgradeAwareHandler(location, transport, true, false, proxy.NewErrorResponder(responder))
	h.MaxBytesPerSec = capabilities.Get().PerConnectionBandwidthLimitBytesPerSec
	return h, nil
}

// newProxyTransport is how the API server reaches pods and Service
// endpoints, as kube-apiserver's proxy transport: no environment proxy, and
// for https targets no verification of their (pod-chosen) certificates.
func newProxyTransport() http.RoundTripper {
	return utilnet.SetTransportDefaults(&http.Transport{
		Proxy:       nil,
		DialContext: (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		// A pod's serving certificate is its own choice; kube-apiserver's
		// proxy does not verify it either.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	})
}

// podProxy locates a pod with upstream's pod.ResourceLocation.
func podProxy(pods *objectStore, transport http.RoundTripper) *proxyREST {
	return &proxyREST{
		newOptions: func() runtime.Object { return &corev1.PodProxyOptions{} },
		path:       func(o runtime.Object) string { return o.(*corev1.PodProxyOptions).Path },
		locate: func(ctx context.Context, id string) (*url.URL, http.RoundTripper, error) {
			return pod.ResourceLocation(ctx, internalGetter{pods, func() runtime.Object { return &api.Pod{} }}, transport, id)
		},
	}
}

// serviceProxy locates a Service as upstream's service REST does
// (ResourceLocation in pkg/registry/core/service/storage): a port number
// names its port, and a random ready endpoint of its EndpointSlices that
// is one of the namespace's pods is the target.
func serviceProxy(services, slices *resourceREST, pods *objectStore, transport http.RoundTripper) *proxyREST {
	return &proxyREST{
		newOptions: func() runtime.Object { return &corev1.ServiceProxyOptions{} },
		path:       func(o runtime.Object) string { return o.(*corev1.ServiceProxyOptions).Path },
		locate: func(ctx context.Context, id string) (*url.URL, http.RoundTripper, error) {
			scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
			if !valid {
				return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
			}
			obj, err := services.Get(ctx, name, &metav1.GetOptions{})
			if err != nil {
				return nil, nil, err
			}
			svc := obj.(*corev1.Service)
			if n, err := strconv.ParseInt(port, 10, 64); err == nil {
				if port, err = servicePortName(svc, n); err != nil {
					return nil, nil, err
				}
			}
			list, err := slices.List(ctx, &metainternalversion.ListOptions{
				LabelSelector: labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name})})
			if err != nil {
				return nil, nil, err
			}
			var found []*discoveryv1.EndpointSlice
			for i := range list.(*discoveryv1.EndpointSliceList).Items {
				found = append(found, &list.(*discoveryv1.EndpointSliceList).Items[i])
			}
			if len(found) == 0 {
				return nil, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
			}
			family := corev1.IPv4Protocol
			if len(svc.Spec.IPFamilies) > 0 {
				family = svc.Spec.IPFamilies[0]
			}
			hostPort, err := apiproxy.RandomEndpoint(name, found, port, family, func(ep *discoveryv1.Endpoint) bool {
				return isPodAddress(ctx, ep, pods)
			})
			if err != nil {
				return nil, nil, err
			}
			return &url.URL{Scheme: scheme, Host: hostPort}, transport, nil
		},
	}
}

func servicePortName(svc *corev1.Service, number int64) (string, error) {
	for _, p := range svc.Spec.Ports {
		if int64(p.Port) == number {
			return p.Name, nil
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", number, svc.Name))
}

// isPodAddress: only addresses of the request namespace's pods are proxied
// to, as upstream's isValidAddress.
func isPodAddress(ctx context.Context, ep *discoveryv1.Endpoint, pods *objectStore) bool {
	if ep.TargetRef == nil || ep.TargetRef.Namespace != request.NamespaceValue(ctx) {
		return false
	}
	obj, _, err := pods.get(ctx, ep.TargetRef.Name)
	if err != nil {
		return false
	}
	for _, ip := range obj.(*corev1.Pod).Status.PodIPs {
		if len(ep.Addresses) > 0 && ep.Addresses[0] == ip.IP {
			return true
		}
	}
	return false
}

// nodeProxy reaches a node's server (the kubelet port) with the node
// transport, or another port of the node with the proxy transport, as
// upstream's node.ResourceLocation; like upstream, only global unicast
// node addresses are proxied to.
func nodeProxy(connector *podConnector, transport http.RoundTripper) *proxyREST {
	return &proxyREST{
		newOptions: func() runtime.Object { return &corev1.NodeProxyOptions{} },
		path:       func(o runtime.Object) string { return o.(*corev1.NodeProxyOptions).Path },
		locate: func(ctx context.Context, id string) (*url.URL, http.RoundTripper, error) {
			scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
			if !valid {
				return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", id))
			}
			if connector.transport == nil {
				return nil, nil, apierrors.NewServiceUnavailable("this API server has no client identity for node agents")
			}
			server, err := connector.nodeServer(ctx, name)
			if err != nil {
				return nil, nil, err
			}
			host, serverPort, _ := net.SplitHostPort(server) // nodeServer joins them
			if ip := net.ParseIP(host); ip == nil || !ip.IsGlobalUnicast() {
				return nil, nil, apierrors.NewBadRequest("address not allowed")
			}
			if port == "" || port == serverPort {
				return &url.URL{Scheme: "https", Host: server}, connector.transport, nil
			}
			return &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}, transport, nil
		},
	}
}

// internalGetter reads berth's v1 objects in the internal form upstream's
// locating functions take.
type internalGetter struct {
	objects     *objectStore
	newInternal func() runtime.Object
}

func (g internalGetter) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	obj, _, err := g.objects.get(ctx, name)
	if err != nil {
		return nil, err
	}
	in := g.newInternal()
	if err := legacyscheme.Scheme.Convert(obj, in, nil); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return in, nil
}

// proxyEndpoint serves a proxy subresource for every method upstream's does.
func (f *scopeFactory) proxyEndpoint(res *resource, r *proxyREST, table rest.TableConvertor) (*endpoint, error) {
	kind := corev1.SchemeGroupVersion.WithKind(fmt.Sprintf("%sProxyOptions", res.kind))
	scope, err := f.scope(res, kind, "proxy", table)
	if err != nil {
		return nil, err
	}
	h := perRequest(func() http.Handler { return handlers.ConnectResource(r, scope, f.admit, "proxy", true) })
	verbs := map[string]http.Handler{}
	// RequestInfo's verbs for the methods: HEAD is get, OPTIONS has none.
	for _, verb := range []string{"get", "create", "update", "patch", "delete", ""} {
		verbs[verb] = h
	}
	return &endpoint{namespaced: res.namespaced, groupRes: res.gvr.GroupResource(), verbs: verbs}, nil
}
