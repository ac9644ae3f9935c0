package apiserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

func getWithAccept(t *testing.T, s *testServer, path, accept string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

func TestTableOutput(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	createNodes(t, s, "n1")
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, boundPod("tabled", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, rows := tableOf(t, s, "/api/v1/namespaces/default/pods")
	if !strings.HasPrefix(got, "Name Ready Status Restarts Age") || !strings.Contains(got, "Node") {
		t.Fatalf("columns %q, want kubectl's pod columns", got)
	}
	if len(rows) != 1 || rows[0].Cells[0] != "tabled" {
		t.Fatalf("rows %+v", rows)
	}
}

func TestVersionHealthDiscoveryOpenAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	code, _, body := getWithAccept(t, s, "/version", "")
	var info apimachineryversion.Info
	if code != 200 || json.Unmarshal(body, &info) != nil || !strings.HasPrefix(info.GitVersion, "v1.37.") || info.Major != "1" || info.Minor != "37" {
		t.Fatalf("/version: %d %s", code, body)
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if code, _, body := getWithAccept(t, s, path, ""); code != 200 || string(body) != "ok" {
			t.Fatalf("%s: %d %q", path, code, body)
		}
	}
	code, _, body = getWithAccept(t, s, "/api/v1", "application/json")
	if code != 200 || !strings.Contains(string(body), `"name":"pods"`) {
		t.Fatalf("/api/v1: %d %s", code, body)
	}
	code, ctype, _ := getWithAccept(t, s, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	if code != 200 || !strings.Contains(ctype, "protobuf") {
		t.Fatalf("/openapi/v2 as protobuf: %d %s", code, ctype)
	}
	// Every group-version's v3 document builds (they are built on first
	// request, so this is what proves the served resources describable).
	code, _, body = getWithAccept(t, s, "/openapi/v3", "application/json")
	var v3 struct {
		Paths map[string]struct{ ServerRelativeURL string } `json:"paths"`
	}
	if code != 200 || json.Unmarshal(body, &v3) != nil || len(v3.Paths) < 8 || v3.Paths["api/v1"].ServerRelativeURL == "" {
		t.Fatalf("/openapi/v3: %d %s", code, body)
	}
	for key, gv := range v3.Paths {
		code, _, body := getWithAccept(t, s, gv.ServerRelativeURL, "application/json")
		if code != 200 || !strings.Contains(string(body), `"openapi":"3.`) {
			t.Errorf("/openapi/v3/%s: %d %.200s", key, code, body)
		}
	}
	if code, _, body := getWithAccept(t, s, "/nothing/here", ""); code != 404 || !strings.Contains(string(body), "the server could not find the requested resource") {
		t.Fatalf("unknown path: %d %s, want a 404 Status", code, body)
	}
}

func TestStrictFieldValidation(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	before := storeRevision(t, s)
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"dta":{"a":"b"}}`)
	code, status := rawRequest(t, s, "POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", "application/json", body)
	if code != 400 || !strings.Contains(status.Message, `unknown field "dta"`) {
		t.Fatalf("strict create with an unknown field: %d %q, want 400 naming it", code, status.Message)
	}
	assertStoreUnchanged(t, s, before)
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	if _, err := s.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	code, _, body := getWithAccept(t, s, "/metrics", "")
	for _, want := range []string{
		`berth_apiserver_requests_total{code="200",group="",resource="pods",subresource="",verb="list"} 1`,
		`berth_watchcache_revision{prefix="/registry/pods/"}`,
	} {
		if code != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("/metrics: %d, lacks %s:\n%s", code, want, body)
		}
	}
}
