// Package openapi serves the OpenAPI v2 and v3 documents of berth's API,
// built from the discovery resource list and the definitions generated from
// the k8s.io/api types (package generated). kubectl reads them for
// `kubectl explain`, for client-side validation (v2, protobuf) and to learn
// whether the server validates fields itself (v3).
package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"

	"github.com/berth/berth/internal/apiserver/discovery"
	"github.com/berth/berth/internal/apiserver/openapi/generated"
	"github.com/berth/berth/internal/version"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Options shape the documents.
type Options struct {
	// ServerSideFieldValidation advertises the fieldValidation query
	// parameter on writes. Set it only when the REST core rejects unknown
	// and duplicate fields for fieldValidation=Strict: kubectl then leaves
	// validation to the server. Unset, kubectl validates against /openapi/v2
	// itself before sending.
	ServerSideFieldValidation bool
	// Version is the documents' info.version, which OpenAPI requires
	// (kube-apiserver puts its git version there); berth's version if empty.
	Version string
	// Extensions, when set, adds the documents of resources that come and
	// go while the server runs (custom resources).
	Extensions Extensions
}

// Extensions are the OpenAPI documents of resources served beside the
// built-in ones.
type Extensions interface {
	// Generation changes whenever the documents do.
	Generation() uint64
	// MergeV2 returns static with the extensions' paths and definitions
	// merged in (static wins a conflict, as kube-apiserver's merge).
	MergeV2(static *spec.Swagger) (*spec.Swagger, error)
	// V3 returns the extensions' v3 documents by key ("apis/G/V").
	V3() (map[string]*spec3.OpenAPI, error)
}

// Specs are the built documents: one v2 document for everything and one v3
// document per group-version, keyed as /openapi/v3 lists them ("api/v1",
// "apis/coordination.k8s.io/v1").
type Specs struct {
	V2 *spec.Swagger
	V3 map[string]*spec3.OpenAPI
}

// Build describes resources (which should pass discovery.Validate). It fails
// when a resource's kind has no generated definition or a verb has no
// operation.
func Build(resources []discovery.Resource, opts Options) (*Specs, error) {
	d := newDocuments(resources, opts)
	specs := &Specs{V3: map[string]*spec3.OpenAPI{}}
	var err error
	for _, gv := range d.groupVersions {
		if specs.V3[v3Key(gv)], err = d.v3(gv); err != nil {
			return nil, err
		}
	}
	if specs.V2, err = d.v2(); err != nil {
		return nil, err
	}
	return specs, nil
}

// Handler serves /openapi/v2 (JSON or, as kubectl asks, protobuf) and
// /openapi/v3 with its per-group-version documents (serve.go). Mount it at
// /openapi/.
//
// Each document is built when a client first asks for it (as kube-apiserver
// builds its v3 documents), so a server whose clients never ask (agents,
// controllers, client-go programs) builds none, and is then kept only in
// its encodings. The tests that fetch every document prove every served
// resource describable.
func Handler(resources []discovery.Resource, opts Options) (http.Handler, error) {
	d := newDocuments(resources, opts)
	byKey := map[string]*document{}
	for _, gv := range d.groupVersions {
		byKey[v3Key(gv)] = jsonDocument(handler3.ToV3ProtoBinary, func() (any, error) { return d.v3(gv) })
	}
	h := &servedDocuments{built: d, ext: opts.Extensions, staticV3: byKey}
	h.current = &documentSet{v2: h.v2Document(), v3: newV3Documents(byKey)}
	if h.ext != nil {
		h.current.generation = h.ext.Generation() - 1 // built on first request
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/openapi/v2", func(w http.ResponseWriter, r *http.Request) { serveDocument(w, r, h.documents().v2, v2Types, nil) })
	mux.HandleFunc("/openapi/v3", func(w http.ResponseWriter, r *http.Request) { h.documents().v3.serveDiscovery(w, r) })
	mux.HandleFunc("/openapi/v3/", func(w http.ResponseWriter, r *http.Request) { h.documents().v3.serveGroupVersion(w, r) })
	return mux, nil
}

// jsonDocument is a document built by build and encoded as JSON.
func jsonDocument(toProto func([]byte) ([]byte, error), build func() (any, error)) *document {
	return &document{toProto: toProto, build: func() ([]byte, error) {
		doc, err := build()
		if err != nil {
			return nil, err
		}
		return json.Marshal(doc)
	}}
}

// servedDocuments are the built-in documents and, when there are
// extensions, the set rebuilt (on first request) after each of their
// changes; the built-in v3 documents are shared by every set.
type servedDocuments struct {
	built    *documents
	ext      Extensions
	staticV3 map[string]*document

	mu      sync.Mutex
	current *documentSet
}

type documentSet struct {
	generation uint64
	v2         *document
	v3         *v3Documents
}

func (h *servedDocuments) documents() *documentSet {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ext == nil {
		return h.current
	}
	gen := h.ext.Generation()
	if gen == h.current.generation {
		return h.current
	}
	byKey := maps.Clone(h.staticV3)
	v3 := &v3Documents{byKey: byKey}
	extV3, err := h.ext.V3()
	if err != nil {
		v3.discovery.build = func() ([]byte, error) { return nil, err }
	} else {
		for key, doc := range extV3 {
			if _, builtIn := byKey[key]; !builtIn {
				byKey[key] = jsonDocument(handler3.ToV3ProtoBinary, func() (any, error) { return doc, nil })
			}
		}
		v3 = newV3Documents(byKey)
	}
	h.current = &documentSet{generation: gen, v2: h.v2Document(), v3: v3}
	return h.current
}

// v2Document is the one v2 document, with the extensions merged in.
func (h *servedDocuments) v2Document() *document {
	return jsonDocument(handler.ToProtoBinary, func() (any, error) {
		doc, err := h.built.v2()
		if err != nil || h.ext == nil {
			return doc, err
		}
		return h.ext.MergeV2(doc)
	})
}

// v3Key is a group-version's key as /openapi/v3 lists it ("api/v1",
// "apis/coordination.k8s.io/v1").
func v3Key(gv schema.GroupVersion) string { return strings.TrimPrefix(rootPath(gv), "/") }

// documents builds the OpenAPI documents of a resource list.
type documents struct {
	resources     []discovery.Resource
	groupVersions []schema.GroupVersion
	paths         pathBuilder
	namer         *definitionNamer
	info          *spec.Info
}

// newDocuments describes resources' kinds with client-go's scheme, which
// knows the Go type of every k8s.io/api kind, so it covers whatever the
// generated definitions describe. It is only read. (A scheme of the
// package's own, built with the same AddToScheme, held a second copy of it:
// 0.4 MiB with the conversions k8s.io/kubernetes adds to k8s.io/api's
// scheme builders.)
func newDocuments(resources []discovery.Resource, opts Options) *documents {
	scheme := clientgoscheme.Scheme
	if opts.Version == "" {
		opts.Version = version.Version
	}
	return &documents{
		resources:     resources,
		groupVersions: discovery.GroupVersions(resources),
		paths:         pathBuilder{scheme: scheme, fieldValidation: opts.ServerSideFieldValidation},
		namer:         newDefinitionNamer(scheme),
		info:          &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: opts.Version}},
	}
}

func (d *documents) container(gv schema.GroupVersion) (common.RouteContainer, error) {
	c, err := d.paths.container(gv, resourcesOf(d.resources, gv))
	if err != nil {
		return nil, fmt.Errorf("describing %s: %w", gv, err)
	}
	return c, nil
}

// v3 builds the v3 document of one group-version.
func (d *documents) v3(gv schema.GroupVersion) (*spec3.OpenAPI, error) {
	c, err := d.container(gv)
	if err != nil {
		return nil, err
	}
	doc, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{c}, &common.OpenAPIV3Config{
		Info:                           d.info,
		GetDefinitions:                 generated.GetOpenAPIDefinitions,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		GetDefinitionName:              d.namer.name,
	})
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI v3 document of %s: %w", gv, err)
	}
	return doc, nil
}

// v2 builds the one v2 document of every group-version.
func (d *documents) v2() (*spec.Swagger, error) {
	containers := make([]common.RouteContainer, 0, len(d.groupVersions))
	for _, gv := range d.groupVersions {
		c, err := d.container(gv)
		if err != nil {
			return nil, err
		}
		containers = append(containers, c)
	}
	doc, err := builder.BuildOpenAPISpecFromRoutes(containers, &common.Config{
		Info:                           d.info,
		GetDefinitions:                 generated.GetOpenAPIDefinitions,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		GetDefinitionName:              d.namer.name,
	})
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI v2 document: %w", err)
	}
	return doc, nil
}

func resourcesOf(resources []discovery.Resource, gv schema.GroupVersion) []discovery.Resource {
	var out []discovery.Resource
	for _, r := range resources {
		if r.GroupVersion() == gv {
			out = append(out, r)
		}
	}
	return out
}
