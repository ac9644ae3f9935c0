package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// unservedGroups are API groups kube-scheduler v1.37 always watches (its
// DRA manager, locked on, and its CSINode cache) but berth does not serve.
// kube-scheduler waits for every informer to sync before it schedules
// anything, so the shim answers their collections as empty.
var unservedGroups = []string{"resource.k8s.io", "storage.k8s.io"}

// apiShim is the one API endpoint both schedulers use in -peer mode, so
// they reach berth the same way: plain HTTP on loopback to the shim, which
// forwards every request to berth over HTTPS as system:kube-scheduler,
// except list and watch of unservedGroups, which it answers itself with
// empty collections. Nothing else is faked: pods, nodes, bindings, status
// patches and events are berth's.
type apiShim struct {
	proxy *httputil.ReverseProxy
}

// newAPIShim forwards to the server cfg points at, with cfg's credentials.
func newAPIShim(cfg *rest.Config) (*apiShim, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("shim target %q: %w", cfg.Host, err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("shim transport: %w", err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport,
		// Watches stream: pass each event on as it arrives.
		FlushInterval: -1,
		ErrorHandler:  proxyError,
	}
	return &apiShim{proxy: proxy}, nil
}

// proxyError answers 502 when berth cannot be reached; a request its
// client gave up on (a scheduler stopping) needs no answer and no log line.
func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	http.Error(w, "berth API: "+err.Error(), http.StatusBadGateway)
}

// serve answers on l until the listener is closed.
func (s *apiShim) serve(l net.Listener) error {
	err := http.Serve(l, s)
	if err != nil && strings.Contains(err.Error(), "use of closed network connection") {
		return nil
	}
	return err
}

func (s *apiShim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gvk, ok := unservedCollection(r)
	if !ok {
		s.proxy.ServeHTTP(w, r)
		return
	}
	if watching(r) {
		serveEmptyWatch(w, r, gvk)
		return
	}
	writeJSON(w, map[string]any{
		"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind + "List",
		"metadata": map[string]any{"resourceVersion": emptyResourceVersion}, "items": []any{},
	})
}

// emptyResourceVersion is what the empty collections report: they never change.
const emptyResourceVersion = "1"

// unservedCollection recognises a GET of a collection in unservedGroups
// (/apis/GROUP/VERSION/RESOURCE, or namespaced) and names its kind.
func unservedCollection(r *http.Request) (schema.GroupVersionKind, bool) {
	if r.Method != http.MethodGet {
		return schema.GroupVersionKind{}, false
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) == 6 && parts[3] == "namespaces" {
		parts = append(parts[:3], parts[5])
	}
	if len(parts) != 4 || parts[0] != "apis" || !slices.Contains(unservedGroups, parts[1]) {
		return schema.GroupVersionKind{}, false
	}
	return kindFor(schema.GroupVersionResource{Group: parts[1], Version: parts[2], Resource: parts[3]})
}

// kindFor finds the kind client-go's scheme registers for gvr.
func kindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, bool) {
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.GroupVersion() != gvr.GroupVersion() || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural == gvr {
			return gvk, true
		}
	}
	return schema.GroupVersionKind{}, false
}

func watching(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// serveEmptyWatch holds a watch open with no events until the client goes.
// A watch-list request (sendInitialEvents=true, client-go's default
// informer start) first gets the bookmark that ends its empty initial list.
func serveEmptyWatch(w http.ResponseWriter, r *http.Request, gvk schema.GroupVersionKind) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		bookmark := map[string]any{"type": "BOOKMARK", "object": map[string]any{
			"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
			"metadata": map[string]any{
				"resourceVersion": emptyResourceVersion,
				"annotations":     map[string]string{"k8s.io/initial-events-end": "true"},
			},
		}}
		_ = json.NewEncoder(w).Encode(bookmark)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	<-r.Context().Done()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
