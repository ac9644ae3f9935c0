package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/proxy"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"
	"k8s.io/apiserver/pkg/util/flushwriter"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	kubeletclient "k8s.io/kubernetes/pkg/kubelet/client"
	podregistry "k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// podConnector serves the connect subresources pods/log, pods/exec,
// pods/attach and pods/portforward: it finds the pod's node and streams
// the log from, or proxies the upgraded stream to, that node's agent (its
// node server, the kubelet's port), presenting the API server's client
// certificate. The verbs were already authorized by the filter chain (get
// for GET, create for POST, as upstream). Neither path follows a node's
// redirect: a node must not point the API server, with its client
// certificate, at another server, nor hand the caller another server's
// content.
type podConnector struct {
	pods, nodes *objectStore
	// transport reaches node servers; nil when the server has no client
	// identity for nodes, and then every connect request fails with 503.
	transport  http.RoundTripper
	authorizer authorizer.Authorizer
	admission  *connectAdmission
	writeError func(error, http.ResponseWriter, *http.Request)
}

// connectSubresource is one connect subresource, located as upstream's
// pod registry locates it.
type connectSubresource struct {
	name    string
	upgrade bool
	// newOptions is the subresource's options in upstream's internal form.
	newOptions func() runtime.Object
	// locate finds the node server's URL for the options.
	locate func(ctx context.Context, pods podregistry.ResourceGetter, nodes kubeletclient.ConnectionInfoGetter, name string, opts runtime.Object) (*url.URL, error)
}

var connectSubresources = map[string]connectSubresource{
	"log": {name: "log", newOptions: func() runtime.Object { return &api.PodLogOptions{} }, locate: locateLog},
	"exec": {name: "exec", upgrade: true, newOptions: func() runtime.Object { return &api.PodExecOptions{} },
		locate: func(ctx context.Context, pods podregistry.ResourceGetter, nodes kubeletclient.ConnectionInfoGetter, name string, opts runtime.Object) (*url.URL, error) {
			loc, _, err := podregistry.ExecLocation(ctx, pods, nodes, name, opts.(*api.PodExecOptions))
			return loc, err
		}},
	"attach": {name: "attach", upgrade: true, newOptions: func() runtime.Object { return &api.PodAttachOptions{} },
		locate: func(ctx context.Context, pods podregistry.ResourceGetter, nodes kubeletclient.ConnectionInfoGetter, name string, opts runtime.Object) (*url.URL, error) {
			loc, _, err := podregistry.AttachLocation(ctx, pods, nodes, name, opts.(*api.PodAttachOptions))
			return loc, err
		}},
	"portforward": {name: "portforward", upgrade: true, newOptions: func() runtime.Object { return &api.PodPortForwardOptions{} },
		locate: func(ctx context.Context, pods podregistry.ResourceGetter, nodes kubeletclient.ConnectionInfoGetter, name string, opts runtime.Object) (*url.URL, error) {
			loc, _, err := podregistry.PortForwardLocation(ctx, pods, nodes, name, opts.(*api.PodPortForwardOptions))
			return loc, err
		}},
}

// locateLog checks the options as upstream's LogREST does, then locates
// the log.
func locateLog(ctx context.Context, pods podregistry.ResourceGetter, nodes kubeletclient.ConnectionInfoGetter, name string, opts runtime.Object) (*url.URL, error) {
	logOpts := opts.(*api.PodLogOptions)
	if errs := validation.ValidatePodLogOptions(logOpts, false); len(errs) > 0 {
		return nil, apierrors.NewInvalid(api.Kind("PodLogOptions"), name, errs)
	}
	loc, _, err := podregistry.LogLocation(ctx, pods, nodes, name, logOpts)
	return loc, err
}

// endpoint returns the subresource's endpoint: log is GET only; the
// streaming ones take GET (websocket) and POST (SPDY), as upstream.
func (c *podConnector) endpoint(sub string) (*endpoint, error) {
	spec, ok := connectSubresources[sub]
	if !ok {
		return nil, fmt.Errorf("pods: no connect handler for %q", sub)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { c.serve(spec, w, req) })
	verbs := map[string]http.Handler{"get": h}
	if spec.upgrade {
		verbs["create"] = h
	}
	return &endpoint{namespaced: true, groupRes: corev1.Resource("pods"), verbs: verbs}, nil
}

func (c *podConnector) serve(spec connectSubresource, w http.ResponseWriter, req *http.Request) {
	info, _ := request.RequestInfoFrom(req.Context())
	ctx := request.WithNamespace(req.Context(), info.Namespace)
	if err := c.authorizeWebsocketCreate(ctx, spec, info); err != nil {
		c.writeError(err, w, req)
		return
	}
	if err := c.admission.check(ctx, spec.name, info, req.URL.Query()); err != nil {
		c.writeError(err, w, req)
		return
	}
	loc, err := c.location(ctx, spec, info.Name, req.URL.Query())
	if err != nil {
		c.writeError(err, w, req)
		return
	}
	if !spec.upgrade {
		c.streamLog(w, req.WithContext(ctx), loc, info.Name)
		return
	}
	out := req.Clone(ctx)
	out.URL.RawQuery = loc.RawQuery // the non-upgrade proxy sends the request's query
	// The caller's own credentials are not the node's business.
	out.Header.Del("Authorization")
	for name := range out.Header {
		if strings.HasPrefix(name, "Impersonate-") {
			out.Header.Del(name)
		}
	}
	// An upgrade the node answers with a redirect fails ("invalid upgrade
	// response"): the handler dials the node itself and follows nothing.
	h := proxy.NewUpgradeAwareHandler(loc, c.transport, false, true, proxyResponder{c.writeError})
	h.ServeHTTP(w, out)
}

// streamLog serves pods/log as upstream's LogREST does: a
// LocationStreamer that refuses redirects and turns the node's error
// answers into Status errors, its body written as responsewriters'
// StreamObject writes it (flushed when following, over a websocket when
// asked for one).
func (c *podConnector) streamLog(w http.ResponseWriter, req *http.Request, loc *url.URL, name string) {
	if loc == nil { // no node yet: no log, as upstream's StreamObject answers
		w.WriteHeader(http.StatusNoContent)
		return
	}
	follow, _ := strconv.ParseBool(loc.Query().Get("follow"))
	streamer := &genericrest.LocationStreamer{
		Location: loc, Transport: c.transport, ContentType: "text/plain", Flush: follow,
		ResponseChecker: genericrest.NewGenericHttpResponseChecker(corev1.Resource("pods/log"), name),
		RedirectChecker: refuseRedirect,
	}
	out, flush, contentType, err := streamer.InputStream(req.Context(), "v1", req.Header.Get("Accept"))
	if errors.Is(err, errNodeRedirect) {
		err = apierrors.NewServiceUnavailable(fmt.Sprintf("error reaching the node: node %s answered pods/log with a redirect, which the API server does not follow", loc.Host))
	}
	if err != nil {
		proxyResponder{c.writeError}.Error(w, req, err)
		return
	}
	defer out.Close()
	if wsstream.IsWebSocketRequest(req) {
		if err := wsstream.NewReader(out, true, wsstream.NewDefaultReaderProtocols()).Copy(w, req); err != nil {
			utilruntime.HandleError(fmt.Errorf("streaming pods/log %s over a websocket: %w", name, err))
		}
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	var dst io.Writer = w
	if flush {
		dst = flushwriter.Wrap(w)
	}
	_, _ = io.Copy(dst, out) // the caller went away or the node ended the stream; either ends the log
}

// authorizeWebsocketCreate: a websocket exec, attach or port-forward is
// a GET, authorized as get by the filter chain; it also needs create, as
// upstream (AuthorizePodWebsocketUpgradeCreatePermission), so that
// read-only users cannot run commands in pods.
func (c *podConnector) authorizeWebsocketCreate(ctx context.Context, spec connectSubresource, info *request.RequestInfo) error {
	if !spec.upgrade || info.Verb != "get" {
		return nil
	}
	u, _ := request.UserFrom(ctx)
	attrs := authorizer.AttributesRecord{User: u, Verb: "create", Namespace: info.Namespace, APIGroup: info.APIGroup,
		APIVersion: info.APIVersion, Resource: info.Resource, Subresource: info.Subresource, Name: info.Name, ResourceRequest: true}
	decision, reason, err := c.authorizer.Authorize(ctx, attrs)
	switch {
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("authorize create on pods/%s: %w", spec.name, err))
	case decision != authorizer.DecisionAllow:
		msg := fmt.Sprintf("user %q cannot create pods/%s", u.GetName(), spec.name)
		if reason != "" {
			msg += ": " + reason
		}
		return apierrors.NewForbidden(corev1.Resource("pods"), info.Name, errors.New(msg))
	}
	return nil
}

// location is the node server's URL for the request, from upstream's pod
// registry (LogLocation, ExecLocation, AttachLocation,
// PortForwardLocation) as kube-apiserver finds it: the options decoded from
// the query, the container chosen or checked, and the query the kubelet
// reads (output=1, not stdout=true). A nil URL, for pods/log of a pod on no
// node yet, is an empty log.
func (c *podConnector) location(ctx context.Context, spec connectSubresource, name string, q url.Values) (*url.URL, error) {
	if c.transport == nil {
		return nil, apierrors.NewServiceUnavailable("this API server has no client identity for node agents")
	}
	opts := spec.newOptions()
	if err := decodeConnectOptions(q, opts); err != nil {
		return nil, err
	}
	pods := internalGetter{objects: c.pods, newInternal: func() runtime.Object { return &api.Pod{} }}
	return spec.locate(ctx, pods, nodeConnections{c}, name, opts)
}

// decodeConnectOptions reads a connect request's v1 query into upstream's
// internal options, as the API installer's connect handler does.
func decodeConnectOptions(q url.Values, into runtime.Object) error {
	if err := legacyscheme.ParameterCodec.DecodeParameters(q, corev1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// nodeConnections tells upstream's locating functions how to reach a
// node's server.
type nodeConnections struct{ c *podConnector }

func (n nodeConnections) GetConnectionInfo(ctx context.Context, nodeName types.NodeName) (*kubeletclient.ConnectionInfo, error) {
	server, err := n.c.nodeServer(ctx, string(nodeName))
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(server) // nodeServer joins them
	return &kubeletclient.ConnectionInfo{Scheme: "https", Hostname: host, Port: port, Transport: n.c.transport}, nil
}

// nodeServer returns host:port of a node's server: its InternalIP (or
// another address) and the port its agent reports.
func (c *podConnector) nodeServer(ctx context.Context, nodeName string) (string, error) {
	obj, _, err := c.nodes.get(request.WithNamespace(ctx, ""), nodeName)
	if err != nil {
		return "", err
	}
	node := obj.(*corev1.Node)
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port <= 0 {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("node %s reports no node server port (its agent runs without --tls-cert-file)", nodeName))
	}
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return net.JoinHostPort(a.Address, strconv.Itoa(int(port))), nil
			}
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("node %s reports no address", nodeName))
}

// errNodeRedirect is refuseRedirect's refusal.
var errNodeRedirect = errors.New("redirects forbidden")

// refuseRedirect is upstream's genericrest.PreventRedirects with an error
// of its own, so that the refusal names the node and not the redirect's
// target (which may carry credentials of its own).
func refuseRedirect(*http.Request, []*http.Request) error { return errNodeRedirect }

// proxyResponder reports proxy failures (node unreachable, refused) as
// Status errors.
type proxyResponder struct {
	writeError func(error, http.ResponseWriter, *http.Request)
}

func (p proxyResponder) Error(w http.ResponseWriter, req *http.Request, err error) {
	if _, ok := err.(apierrors.APIStatus); !ok {
		err = apierrors.NewServiceUnavailable(fmt.Sprintf("error reaching the node: %v", err))
	}
	p.writeError(err, w, req)
}
