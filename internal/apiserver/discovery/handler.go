package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// document is one discovery response, encoded once in both wire formats:
// the resource list is fixed for the life of a server, so encoding per
// request would be wasted work.
type document struct {
	json, protobuf []byte
	etag           string // quoted, as the ETag header carries it
}

func (d document) body(enc encoding) []byte {
	if enc == encodingProtobuf {
		return d.protobuf
	}
	return d.json
}

// documents are every discovery response for one set of resources.
type documents struct {
	legacy     map[string]document // by path: /api, /apis, /apis/G, /api/v1, /apis/G/V
	aggregated map[string]document // /api and /apis
	generation uint64              // of the Extensions they include
}

type handler struct {
	static []Resource
	ext    *Extensions

	mu   sync.Mutex
	docs *documents
}

// Handler serves /api, /apis and everything below them from resources
// (which should pass Validate), followed by ext's groups when ext is not
// nil. Mount it at /api and /apis (with and without trailing slash); any
// other path is a 404. The documents are encoded once, and again only when
// ext changes.
func Handler(resources []Resource, ext *Extensions) http.Handler {
	h := &handler{static: resources, ext: ext}
	gen, extra := ext.snapshot()
	h.docs = encodeDocuments(append(slices.Clip(resources), extra...), gen)
	return h
}

// current returns the documents for ext's present groups.
func (h *handler) current() *documents {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ext == nil {
		return h.docs
	}
	h.ext.mu.Lock()
	gen := h.ext.generation
	h.ext.mu.Unlock()
	if gen != h.docs.generation {
		gen, extra := h.ext.snapshot()
		h.docs = encodeDocuments(append(slices.Clip(h.static), extra...), gen)
	}
	return h.docs
}

func encodeDocuments(resources []Resource, generation uint64) *documents {
	d := &documents{legacy: map[string]document{}, aggregated: map[string]document{}, generation: generation}
	var core group
	var named []group
	for _, g := range groupsOf(resources) {
		if g.name == "" {
			core = g
		} else {
			named = append(named, g)
		}
	}
	d.legacy["/api"] = mustEncode(apiVersions(core))
	d.aggregated["/api"] = mustEncode(aggregatedList(nonEmpty(core)))
	d.legacy["/apis"] = mustEncode(apiGroupList(named))
	d.aggregated["/apis"] = mustEncode(aggregatedList(named))
	for _, g := range append(nonEmpty(core), named...) {
		if g.name != "" {
			d.legacy["/apis/"+g.name] = mustEncode(apiGroupOf(g))
		}
		for _, v := range g.versions {
			gv := schema.GroupVersion{Group: g.name, Version: v.name}
			d.legacy[versionPath(gv)] = mustEncode(apiResourceList(gv, v.resources))
		}
	}
	return d
}

func nonEmpty(g group) []group {
	if len(g.versions) == 0 {
		return nil
	}
	return []group{g}
}

// versionPath is where a group-version's resource list is served.
func versionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			fmt.Sprintf("%s is not supported on %s", r.Method, r.URL.Path))
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	docs := h.current()
	legacy, ok := docs.legacy[path]
	if !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("the server could not find the requested resource (%s)", r.URL.Path))
		return
	}
	aggregated, hasAggregated := docs.aggregated[path]
	rep, ok := negotiate(r.Header.Get("Accept"), hasAggregated)
	if !ok {
		writeStatus(w, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			"only application/json and application/vnd.kubernetes.protobuf discovery documents are served")
		return
	}
	// The answer depends on Accept, so caches must key on it.
	w.Header().Set("Vary", "Accept")
	w.Header().Set("Content-Type", rep.contentType())
	if !rep.aggregated {
		w.WriteHeader(http.StatusOK)
		w.Write(legacy.body(rep.encoding))
		return
	}
	// Aggregated discovery is revalidated by ETag, as kube-apiserver does, so
	// that client-go's cache costs a 304 when nothing changed.
	w.Header().Set("ETag", aggregated.etag)
	if r.Header.Get("If-None-Match") == aggregated.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	w.Write(aggregated.body(rep.encoding))
}

// mustEncode encodes a document built from our own types; failure is a
// programming error (an unencodable type), never bad input.
func mustEncode(obj runtime.Object) document {
	j, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("discovery: encoding %T as JSON: %v", obj, err))
	}
	var p bytes.Buffer
	if err := protobuf.NewSerializer(nil, nil).EncodeWithAllocator(obj, &p, &runtime.SimpleAllocator{}); err != nil {
		panic(fmt.Sprintf("discovery: encoding %T as protobuf: %v", obj, err))
	}
	hash := fnv.New64a()
	hash.Write(j)
	return document{json: j, protobuf: p.Bytes(), etag: strconv.Quote(strconv.FormatUint(hash.Sum64(), 16))}
}

// writeStatus answers with a Kubernetes Status, as every API error is.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message,
	}
	body, _ := json.Marshal(status) // a Status always encodes
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(code)
	w.Write(body)
}
