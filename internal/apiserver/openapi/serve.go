package openapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/munnerz/goautoneg"
	"k8s.io/kube-openapi/pkg/handler3"
)

// The documents are served from their encodings alone, kept gzipped.
// kube-openapi's handlers keep each document's object model beside its
// encodings for the life of the server: ~11 MB of heap once kubectl has
// asked for them (+30 MiB RSS on bench/api's large shape), where the
// gzipped encodings take well under a megabyte. So berth serves them
// itself, with the content negotiation, ETags and /openapi/v3 hash
// redirects of kube-openapi's handlers, and with its encoders
// (ToProtoBinary, ToV3ProtoBinary).

// mediaType is one form a document is served in.
type mediaType struct {
	typ, subType string // as a client's Accept names it
	contentType  string // as the response names it
	proto        bool
}

func protobufTypes(v string) []mediaType {
	served := "application/com.github.proto-openapi.spec." + v + ".v1.0+protobuf"
	return []mediaType{
		{"application", "json", "application/json", false},
		{"application", "com.github.proto-openapi.spec." + v + ".v1.0+protobuf", served, true},
		{"application", "com.github.proto-openapi.spec." + v + "@v1.0+protobuf", served, true}, // deprecated spelling
	}
}

var (
	v2Types = protobufTypes("v2")
	v3Types = protobufTypes("v3")
)

// document is one OpenAPI document, built on first request and then kept
// only as its gzipped JSON and protobuf encodings.
type document struct {
	build   func() ([]byte, error)       // the document as JSON
	toProto func([]byte) ([]byte, error) // nil: served as JSON only

	once            sync.Once
	err             error
	etag            string
	modified        time.Time
	gzJSON, gzProto []byte
}

func (d *document) load() error {
	d.once.Do(func() {
		plain, err := d.build()
		if err != nil {
			d.err = err
			return
		}
		d.etag = fmt.Sprintf("%X", sha512.Sum512(plain)) // kube-openapi's ETag
		d.modified = time.Now()
		if d.toProto != nil {
			proto, err := d.toProto(plain)
			if err != nil {
				d.err = fmt.Errorf("encoding as protobuf: %w", err)
				return
			}
			d.gzProto = gzipped(proto)
		}
		d.gzJSON = gzipped(plain)
	})
	return d.err
}

func gzipped(data []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // a valid level cannot fail
	_, _ = zw.Write(data)                                  // writes to a bytes.Buffer cannot fail
	_ = zw.Close()
	return b.Bytes()
}

// serve answers with the document in the negotiated form t, gzipped if the
// client takes gzip (client-go and kubectl do) and unzipped otherwise.
func (d *document) serve(w http.ResponseWriter, r *http.Request, t mediaType) {
	body := d.gzJSON
	if t.proto {
		body = d.gzProto
	}
	h := w.Header()
	h.Set("Content-Type", t.contentType)
	h.Set("Etag", strconv.Quote(d.etag))
	h.Add("Vary", "Accept-Encoding")
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
	} else {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			http.Error(w, "unzipping the OpenAPI document: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	http.ServeContent(w, r, "", d.modified, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding value admits gzip.
func acceptsGzip(header string) bool {
	for _, coding := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(coding, ";")
		if name = strings.TrimSpace(name); name != "gzip" && name != "*" {
			continue
		}
		q, isQ := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		if !isQ {
			return true
		}
		weight, err := strconv.ParseFloat(q, 64)
		return err != nil || weight > 0
	}
	return false
}

// negotiate picks the first of types the request's Accept admits.
func negotiate(w http.ResponseWriter, r *http.Request, types []mediaType) (mediaType, bool) {
	w.Header().Add("Vary", "Accept")
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, t := range types {
			if (clause.Type == t.typ || clause.Type == "*") && (clause.SubType == t.subType || clause.SubType == "*") {
				return t, true
			}
		}
	}
	w.WriteHeader(http.StatusNotAcceptable)
	return mediaType{}, false
}

// serveDocument negotiates, loads and serves d; check, when set, may
// answer instead once d is loaded (the v3 hash redirect).
func serveDocument(w http.ResponseWriter, r *http.Request, d *document, types []mediaType, check func(*document) bool) {
	t, ok := negotiate(w, r, types)
	if !ok || !loaded(w, d) || (check != nil && !check(d)) {
		return
	}
	d.serve(w, r, t)
}

// loaded loads d or answers with why it cannot be.
func loaded(w http.ResponseWriter, d *document) bool {
	if err := d.load(); err != nil {
		http.Error(w, "building the OpenAPI document: "+err.Error(), http.StatusInternalServerError)
		return false
	}
	return true
}

// v3Documents serves /openapi/v3 (the list of group-versions, each with
// its document's hash) and /openapi/v3/<key>.
type v3Documents struct {
	byKey     map[string]*document
	discovery document
}

func newV3Documents(byKey map[string]*document) *v3Documents {
	v := &v3Documents{byKey: byKey}
	v.discovery.build = func() ([]byte, error) {
		list := handler3.OpenAPIV3Discovery{Paths: map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}}
		for key, d := range byKey {
			if err := d.load(); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			list.Paths[key] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: serverRelativeURL(key, d.etag)}
		}
		return json.Marshal(list)
	}
	return v
}

// serveDiscovery answers JSON whatever the client accepts, as kube-openapi
// does.
func (v *v3Documents) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	if loaded(w, &v.discovery) {
		v.discovery.serve(w, r, v3Types[0])
	}
}

func (v *v3Documents) serveGroupVersion(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/openapi/v3/")
	d, ok := v.byKey[key]
	if !ok {
		http.NotFound(w, r)
		return
	}
	serveDocument(w, r, d, v3Types, func(d *document) bool {
		hash := r.URL.Query().Get("hash")
		if hash == "" {
			return true
		}
		if hash != d.etag { // an outdated link: to the current one
			http.Redirect(w, r, serverRelativeURL(key, d.etag), http.StatusMovedPermanently)
			return false
		}
		// A hashed link names one content forever.
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
		return true
	})
}

// serverRelativeURL is a group-version's link with its document's hash.
func serverRelativeURL(key, etag string) string {
	u := url.URL{Path: "/openapi/v3/" + key, RawQuery: url.Values{"hash": {etag}}.Encode()}
	return u.String()
}
