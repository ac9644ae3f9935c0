package discovery

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// recorder remembers the Content-Type of every response, so a test can
// tell which discovery form a real client was actually given.
type recorder struct {
	mu           sync.Mutex
	contentTypes map[string]string
	next         http.Handler
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.next.ServeHTTP(w, r)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.contentTypes[r.URL.Path] = w.Header().Get("Content-Type")
}

func serve(t *testing.T, resources []Resource) (*httptest.Server, *recorder) {
	t.Helper()
	rec := &recorder{contentTypes: map[string]string{}, next: Handler(resources, nil)}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return srv, rec
}

// summary flattens a discovery result to "group/version resource kind
// namespaced shortnames verbs" lines so two forms can be compared whole.
func summary(t *testing.T, lists []*metav1.APIResourceList) []string {
	t.Helper()
	var out []string
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			// client-go fills in the list's group-version on every aggregated
			// entry; legacy discovery leaves it implied.
			if r.Version == "" {
				r.Group, r.Version = gv.Group, gv.Version
			}
			// and gives subresources their parent's singular name, which
			// kube-apiserver's legacy form leaves empty.
			if strings.Contains(r.Name, "/") {
				r.SingularName = ""
			}
			b, _ := json.Marshal(struct {
				GV, Name, Singular, Kind, Group, Version string
				Namespaced                               bool
				Short, Verbs, Categories                 []string
			}{l.GroupVersion, r.Name, r.SingularName, r.Kind, r.Group, r.Version, r.Namespaced, r.ShortNames, r.Verbs, r.Categories})
			out = append(out, string(b))
		}
	}
	sort.Strings(out)
	return out
}

func discoveryClient(t *testing.T, srv *httptest.Server, legacy bool) *clientdiscovery.DiscoveryClient {
	t.Helper()
	client, err := clientdiscovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	client.UseLegacyDiscovery = legacy
	return client
}

func discover(t *testing.T, srv *httptest.Server, legacy bool) []*metav1.APIResourceList {
	t.Helper()
	client := discoveryClient(t, srv, legacy)
	_, lists, err := client.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("ServerGroupsAndResources(legacy=%v): %v", legacy, err)
	}
	return lists
}

func TestClientGoLegacyDiscovery(t *testing.T) {
	srv, rec := serve(t, Default())
	lists := discover(t, srv, true)
	if ct := rec.contentTypes["/apis"]; ct != "application/json" {
		t.Errorf("legacy /apis Content-Type = %q", ct)
	}
	byGV := map[string]*metav1.APIResourceList{}
	for _, l := range lists {
		byGV[l.GroupVersion] = l
	}
	for _, gv := range []string{"v1", "events.k8s.io/v1", "coordination.k8s.io/v1", "certificates.k8s.io/v1"} {
		if byGV[gv] == nil {
			t.Errorf("group-version %s not discovered", gv)
		}
	}
	var pods, eviction *metav1.APIResource
	for i, r := range byGV["v1"].APIResources {
		switch r.Name {
		case "pods":
			pods = &byGV["v1"].APIResources[i]
		case "pods/eviction":
			eviction = &byGV["v1"].APIResources[i]
		}
	}
	if pods == nil || !pods.Namespaced || !slices.Equal(pods.ShortNames, []string{"po"}) || !slices.Contains(pods.Categories, "all") || pods.StorageVersionHash == "" {
		t.Errorf("pods = %+v", pods)
	}
	if eviction == nil || eviction.Group != "policy" || eviction.Version != "v1" || eviction.Kind != "Eviction" {
		t.Errorf("pods/eviction = %+v", eviction)
	}
}

func TestClientGoAggregatedDiscoveryMatchesLegacy(t *testing.T) {
	all := Default()
	srv, rec := serve(t, all)
	aggregated := discover(t, srv, false)
	for _, path := range []string{"/api", "/apis"} {
		if ct := rec.contentTypes[path]; ct != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
			t.Errorf("client-go was answered %q at %s, want aggregated discovery", ct, path)
		}
	}
	if _, asked := rec.contentTypes["/api/v1"]; asked {
		t.Errorf("client-go fetched /api/v1 although aggregated discovery answered everything")
	}
	legacy := discover(t, srv, true)
	a, l := summary(t, aggregated), summary(t, legacy)
	if !slices.Equal(a, l) {
		t.Errorf("aggregated and legacy discovery differ:\naggregated: %v\nlegacy:     %v", a, l)
	}
	if len(a) < 20 {
		t.Errorf("only %d resources discovered: %v", len(a), a)
	}
}

func get(t *testing.T, url, accept string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestAggregatedETagAnswers304(t *testing.T) {
	srv, _ := serve(t, Default())
	first := get(t, srv.URL+"/apis", clientdiscovery.AcceptV2)
	etag := first.Header.Get("ETag")
	if first.StatusCode != 200 || etag == "" || etag[0] != '"' {
		t.Fatalf("first GET: %d, ETag %q", first.StatusCode, etag)
	}
	if again := get(t, srv.URL+"/apis", clientdiscovery.AcceptV2, "If-None-Match", etag); again.StatusCode != http.StatusNotModified {
		t.Errorf("GET with matching If-None-Match = %d, want 304", again.StatusCode)
	}
	if stale := get(t, srv.URL+"/apis", clientdiscovery.AcceptV2, "If-None-Match", `"stale"`); stale.StatusCode != 200 {
		t.Errorf("GET with stale If-None-Match = %d, want 200", stale.StatusCode)
	}
	if core := get(t, srv.URL+"/api", clientdiscovery.AcceptV2); core.Header.Get("ETag") == etag {
		t.Errorf("/api and /apis share ETag %s although their documents differ", etag)
	}
	// A different resource list must change the ETag, or clients keep stale data.
	other, _ := serve(t, append(Default(), Resource{Group: "example.berth.io", Version: "v1", Resource: "widgets", Kind: "Widget", SingularName: "widget", Verbs: []string{"get"}}))
	if changed := get(t, other.URL+"/apis", clientdiscovery.AcceptV2); changed.Header.Get("ETag") == etag {
		t.Errorf("ETag %s unchanged after adding a group", etag)
	}
}

func decodeProtobuf(t *testing.T, resp *http.Response, into runtime.Object) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	if !bytes.HasPrefix(body, []byte("k8s\x00")) {
		t.Fatalf("protobuf body lacks the k8s envelope: %q", body[:min(len(body), 16)])
	}
	var unknown runtime.Unknown
	if err := unknown.Unmarshal(body[4:]); err != nil {
		t.Fatal(err)
	}
	if err := into.(interface{ Unmarshal([]byte) error }).Unmarshal(unknown.Raw); err != nil {
		t.Fatal(err)
	}
}

func TestProtobufDiscovery(t *testing.T) {
	srv, _ := serve(t, Default())
	resp := get(t, srv.URL+"/apis/coordination.k8s.io/v1", "application/vnd.kubernetes.protobuf, application/json")
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var list metav1.APIResourceList
	decodeProtobuf(t, resp, &list)
	if list.GroupVersion != "coordination.k8s.io/v1" || len(list.APIResources) != 1 || list.APIResources[0].Name != "leases" {
		t.Errorf("decoded %+v", list)
	}

	resp = get(t, srv.URL+"/api", "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var agg apidiscoveryv2.APIGroupDiscoveryList
	decodeProtobuf(t, resp, &agg)
	if len(agg.Items) != 1 || agg.Items[0].Name != "" || agg.Items[0].Versions[0].Version != "v1" {
		t.Errorf("decoded %+v", agg)
	}
}

func TestNegotiationAndErrors(t *testing.T) {
	srv, _ := serve(t, Default())
	cases := []struct {
		path, accept, method string
		code                 int
		contentType          string
	}{
		{"/api", "", "GET", 200, "application/json"},
		{"/api/", "*/*", "GET", 200, "application/json"},
		{"/apis/certificates.k8s.io", "application/json", "GET", 200, "application/json"},
		// Only v2 is served; a v2beta1-only client falls back to legacy JSON.
		{"/apis", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", "GET", 200, "application/json"},
		// The aggregated form exists only at /api and /apis.
		{"/api/v1", clientdiscovery.AcceptV2 + ",application/json", "GET", 200, "application/json"},
		{"/apis", "application/yaml", "GET", 406, "application/json"},
		{"/apis/apiextensions.k8s.io", "", "GET", 404, "application/json"},
		{"/apis/coordination.k8s.io/v2", "", "GET", 404, "application/json"},
		{"/api/v1", "", "POST", 405, "application/json"},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		req.Header.Set("Accept", tc.accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || resp.Header.Get("Content-Type") != tc.contentType {
			t.Errorf("%s %s Accept=%q: %d %q, want %d %q", tc.method, tc.path, tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), tc.code, tc.contentType)
		}
		if tc.code >= 400 {
			var status metav1.Status
			if err := json.Unmarshal(body, &status); err != nil || status.Kind != "Status" || int(status.Code) != tc.code {
				t.Errorf("%s %s: error body is not a Status: %s", tc.method, tc.path, body)
			}
		}
	}
}

func TestLegacyDocuments(t *testing.T) {
	srv, _ := serve(t, Default())
	var versions metav1.APIVersions
	json.NewDecoder(get(t, srv.URL+"/api", "").Body).Decode(&versions)
	if versions.Kind != "APIVersions" || !slices.Equal(versions.Versions, []string{"v1"}) {
		t.Errorf("/api = %+v", versions)
	}
	var groups metav1.APIGroupList
	json.NewDecoder(get(t, srv.URL+"/apis", "").Body).Decode(&groups)
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name+"="+g.PreferredVersion.GroupVersion)
	}
	want := []string{"apps=apps/v1", "autoscaling=autoscaling/v2", "batch=batch/v1", "events.k8s.io=events.k8s.io/v1", "coordination.k8s.io=coordination.k8s.io/v1",
		"discovery.k8s.io=discovery.k8s.io/v1", "certificates.k8s.io=certificates.k8s.io/v1", "networking.k8s.io=networking.k8s.io/v1",
		"rbac.authorization.k8s.io=rbac.authorization.k8s.io/v1", "authentication.k8s.io=authentication.k8s.io/v1", "authorization.k8s.io=authorization.k8s.io/v1",
		"node.k8s.io=node.k8s.io/v1", "policy=policy/v1", "scheduling.k8s.io=scheduling.k8s.io/v1",
		"storage.k8s.io=storage.k8s.io/v1", "resource.k8s.io=resource.k8s.io/v1", "admissionregistration.k8s.io=admissionregistration.k8s.io/v1",
		"flowcontrol.apiserver.k8s.io=flowcontrol.apiserver.k8s.io/v1", "storagemigration.k8s.io=storagemigration.k8s.io/v1"}
	if !slices.Equal(names, want) {
		t.Errorf("/apis groups = %v, want %v", names, want)
	}
}
