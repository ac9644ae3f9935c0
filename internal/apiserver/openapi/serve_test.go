package openapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/kube-openapi/pkg/handler3"

	"github.com/berth/berth/internal/apiserver/discovery"
)

// get requests path from h with the given headers (name, value pairs).
func get(t *testing.T, h http.Handler, path string, headers ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// body reads a response's body, unzipping it if it says gzip.
func body(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func newTestHandler(t *testing.T) http.Handler {
	t.Helper()
	h, err := Handler(discovery.Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// /openapi/v2 negotiates JSON and protobuf as kube-openapi's handler does,
// gzipped only for clients that take it, with an ETag that answers 304.
func TestV2IsServedInEveryFormFromItsEncodings(t *testing.T) {
	h := newTestHandler(t)
	plain := get(t, h, "/openapi/v2", "Accept", "application/json")
	zipped := get(t, h, "/openapi/v2", "Accept", "application/json", "Accept-Encoding", "gzip")
	if plain.StatusCode != 200 || plain.Header.Get("Content-Encoding") != "" || zipped.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("JSON: %d %q, gzipped %q", plain.StatusCode, plain.Header.Get("Content-Encoding"), zipped.Header.Get("Content-Encoding"))
	}
	doc := body(t, plain)
	if !bytes.Equal(doc, body(t, zipped)) || !json.Valid(doc) || !bytes.Contains(doc, []byte(`"io.k8s.api.core.v1.Pod"`)) {
		t.Fatalf("the JSON forms differ or lack the Pod definition (%d bytes)", len(doc))
	}
	for _, accept := range []string{"application/com.github.proto-openapi.spec.v2@v1.0+protobuf", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"} {
		resp := get(t, h, "/openapi/v2", "Accept", accept+", application/json")
		var parsed openapi_v2.Document
		if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "protobuf") || proto.Unmarshal(body(t, resp), &parsed) != nil || parsed.Definitions == nil {
			t.Errorf("Accept %s: %s, not a protobuf document", accept, ct)
		}
	}
	etag := plain.Header.Get("Etag")
	if again := get(t, h, "/openapi/v2", "If-None-Match", etag); etag == "" || again.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %s: %d, want 304", etag, again.StatusCode)
	}
	if resp := get(t, h, "/openapi/v2", "Accept", "text/plain"); resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("Accept text/plain: %d, want 406", resp.StatusCode)
	}
}

// /openapi/v3 lists every group-version with its document's hash; a
// hashed link is cacheable forever, an outdated one redirects to the
// current one, an unknown group-version is 404.
func TestV3DiscoveryLinksHashedDocuments(t *testing.T) {
	h := newTestHandler(t)
	var list handler3.OpenAPIV3Discovery
	// JSON whatever the client accepts, as kube-openapi answers.
	if resp := get(t, h, "/openapi/v3", "Accept-Encoding", "gzip", "Accept", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"); resp.StatusCode != 200 || json.Unmarshal(body(t, resp), &list) != nil {
		t.Fatalf("/openapi/v3: %d", resp.StatusCode)
	}
	if len(list.Paths) != len(discovery.GroupVersions(discovery.Default())) {
		t.Errorf("discovery lists %d group-versions, want %d", len(list.Paths), len(discovery.GroupVersions(discovery.Default())))
	}
	link := list.Paths["api/v1"].ServerRelativeURL
	resp := get(t, h, link, "Accept", "application/json")
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body(t, resp), &doc) != nil || !strings.HasPrefix(doc.OpenAPI, "3.") ||
		resp.Header.Get("Cache-Control") != "public, immutable" || strconv.Quote(strings.SplitN(link, "hash=", 2)[1]) != resp.Header.Get("Etag") {
		t.Fatalf("%s: %d %q %q", link, resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header.Get("Etag"))
	}
	var parsed openapi_v3.Document
	pb := get(t, h, link, "Accept", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf")
	if proto.Unmarshal(body(t, pb), &parsed) != nil || parsed.Components == nil {
		t.Errorf("%s as protobuf: %d %s", link, pb.StatusCode, pb.Header.Get("Content-Type"))
	}
	if old := get(t, h, "/openapi/v3/api/v1?hash=0123"); old.StatusCode != http.StatusMovedPermanently || old.Header.Get("Location") != link {
		t.Errorf("an outdated hash: %d to %q, want 301 to %s", old.StatusCode, old.Header.Get("Location"), link)
	}
	if unhashed := get(t, h, "/openapi/v3/api/v1"); unhashed.StatusCode != 200 || unhashed.Header.Get("Cache-Control") != "" {
		t.Errorf("no hash: %d, Cache-Control %q", unhashed.StatusCode, unhashed.Header.Get("Cache-Control"))
	}
	if missing := get(t, h, "/openapi/v3/apis/nothing.example/v1"); missing.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown group-version: %d, want 404", missing.StatusCode)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"": false, "gzip": true, "deflate, gzip": true, "gzip;q=0": false, "gzip; q=0.5": true,
		"*": true, "identity": false, "br, gzip;q=0.0": false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}
