// Package openapi serves the OpenAPI v2 and v3 documents of berth's API,
// built from the discovery resource list and the definitions generated from
// the k8s.io/api types (package generated). kubectl reads them for
// `kubectl explain`, for client-side validation (v2, protobuf) and to learn
// whether the server validates fields itself (v3).
package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/berth/berth/internal/apiserver/discovery"
	"github.com/berth/berth/internal/apiserver/openapi/generated"
	"github.com/berth/berth/internal/version"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	d, err := newDocuments(resources, opts)
	if err != nil {
		return nil, err
	}
	specs := &Specs{V3: map[string]*spec3.OpenAPI{}}
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
	d, err := newDocuments(resources, opts)
	if err != nil {
		return nil, err
	}
	v2 := &document{toProto: handler.ToProtoBinary, build: func() ([]byte, error) {
		doc, err := d.v2()
		if err != nil {
			return nil, err
		}
		return doc.MarshalJSON()
	}}
	byKey := map[string]*document{}
	for _, gv := range d.groupVersions {
		byKey[v3Key(gv)] = &document{toProto: handler3.ToV3ProtoBinary, build: func() ([]byte, error) {
			doc, err := d.v3(gv)
			if err != nil {
				return nil, err
			}
			return json.Marshal(doc)
		}}
	}
	v3 := newV3Documents(byKey)
	mux := http.NewServeMux()
	mux.HandleFunc("/openapi/v2", func(w http.ResponseWriter, r *http.Request) { serveDocument(w, r, v2, v2Types, nil) })
	mux.HandleFunc("/openapi/v3", v3.serveDiscovery)
	mux.HandleFunc("/openapi/v3/", v3.serveGroupVersion)
	return mux, nil
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

func newDocuments(resources []discovery.Resource, opts Options) (*documents, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	if opts.Version == "" {
		opts.Version = version.Version
	}
	return &documents{
		resources:     resources,
		groupVersions: groupVersions(resources),
		paths:         pathBuilder{scheme: scheme, fieldValidation: opts.ServerSideFieldValidation},
		namer:         newDefinitionNamer(scheme),
		info:          &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: opts.Version}},
	}, nil
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

// groupVersions lists the group-versions of resources in first-seen order.
func groupVersions(resources []discovery.Resource) []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range resources {
		if !seen[r.GroupVersion()] {
			seen[r.GroupVersion()] = true
			out = append(out, r.GroupVersion())
		}
	}
	return out
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
