package openapi

import (
	"encoding/json"
	"sync/atomic"
	"testing"

	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/berth/berth/internal/apiserver/discovery"
)

// fakeExtensions serves one group-version once it is switched on.
type fakeExtensions struct {
	generation atomic.Uint64
	on         atomic.Bool
}

func (f *fakeExtensions) Generation() uint64 { return f.generation.Load() }

func (f *fakeExtensions) MergeV2(static *spec.Swagger) (*spec.Swagger, error) {
	if !f.on.Load() {
		return static, nil
	}
	merged := *static
	merged.Definitions = spec.Definitions{"com.example.v1.Widget": spec.Schema{}}
	for k, v := range static.Definitions {
		merged.Definitions[k] = v
	}
	return &merged, nil
}

func (f *fakeExtensions) V3() (map[string]*spec3.OpenAPI, error) {
	if !f.on.Load() {
		return nil, nil
	}
	return map[string]*spec3.OpenAPI{"apis/example.com/v1": {
		Version: "3.0.0", Info: &spec.Info{InfoProps: spec.InfoProps{Title: "widgets", Version: "v1"}},
		Paths: &spec3.Paths{Paths: map[string]*spec3.Path{}},
	}}, nil
}

// TestExtensionDocumentsFollowTheirGeneration: the documents of resources
// added while the server runs (CRDs) are served once their generation
// changes, beside the built-in ones.
func TestExtensionDocumentsFollowTheirGeneration(t *testing.T) {
	ext := &fakeExtensions{}
	h, err := Handler(discovery.Default(), Options{Extensions: ext})
	if err != nil {
		t.Fatal(err)
	}
	paths := func() map[string]handler3.OpenAPIV3DiscoveryGroupVersion {
		var list handler3.OpenAPIV3Discovery
		if err := json.Unmarshal(body(t, get(t, h, "/openapi/v3")), &list); err != nil {
			t.Fatalf("decode /openapi/v3: %v: %s", err, body(t, get(t, h, "/openapi/v3")))
		}
		return list.Paths
	}
	hasWidget := func() bool {
		var doc spec.Swagger
		if err := json.Unmarshal(body(t, get(t, h, "/openapi/v2")), &doc); err != nil {
			t.Fatalf("decode /openapi/v2: %v", err)
		}
		_, ok := doc.Definitions["com.example.v1.Widget"]
		return ok
	}
	if _, ok := paths()["apis/example.com/v1"]; ok || hasWidget() {
		t.Fatal("extension documents served before there were any")
	}
	ext.on.Store(true)
	if _, ok := paths()["apis/example.com/v1"]; ok {
		t.Error("/openapi/v3 changed though the extensions' generation did not")
	}
	ext.generation.Add(1)
	p := paths()
	if _, ok := p["apis/example.com/v1"]; !ok {
		t.Errorf("/openapi/v3 lists %d group-versions, not apis/example.com/v1", len(p))
	}
	if _, ok := p["api/v1"]; !ok {
		t.Error("/openapi/v3 lost the built-in api/v1")
	}
	if !hasWidget() {
		t.Error("/openapi/v2 lacks the extensions' definition")
	}
	if resp := get(t, h, "/openapi/v3/apis/example.com/v1"); resp.StatusCode != 200 {
		t.Errorf("/openapi/v3/apis/example.com/v1: %s", resp.Status)
	}
}
