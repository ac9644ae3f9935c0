package apiserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/berth/berth/internal/testkit/promscrape"
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

// TestMetrics reads kube-apiserver's request metrics and berth's own at
// /metrics: a LIST is counted under upstream's labels, with its response
// size, and a server-side apply as APPLY; the process's Go runtime series
// and the watch cache's are served beside them.
func TestMetrics(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	list := map[string]string{"verb": "LIST", "group": "", "version": "v1", "resource": "pods", "scope": "namespace",
		"component": "apiserver", "dry_run": "", "code": "200"}
	apply := map[string]string{"verb": "APPLY", "resource": "configmaps", "scope": "resource", "dry_run": "All", "code": "201"}
	before := scrapeMetrics(t, s)
	listsBefore, _ := before.Value("apiserver_request_total", list)
	appliesBefore, _ := before.Value("apiserver_request_total", apply)

	if _, err := s.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := corev1ac.ConfigMap("metrics-apply", "default").WithData(map[string]string{"a": "b"})
	if _, err := s.client.CoreV1().ConfigMaps("default").Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "test", DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	after := scrapeMetrics(t, s)
	// Other tests in this process count too: at least one more each.
	if got, _ := after.Value("apiserver_request_total", list); got < listsBefore+1 {
		t.Errorf("apiserver_request_total %v after a LIST of pods: %v, want at least %v", list, got, listsBefore+1)
	}
	if got, _ := after.Value("apiserver_request_total", apply); got < appliesBefore+1 {
		t.Errorf("apiserver_request_total %v after a dry-run apply: %v, want at least %v", apply, got, appliesBefore+1)
	}
	for name, labels := range map[string]map[string]string{
		"apiserver_response_sizes":           {"verb": "LIST", "resource": "pods"},
		"apiserver_request_duration_seconds": {"verb": "LIST", "resource": "pods"},
		"go_goroutines":                      nil,
		"berth_watchcache_revision":          {"prefix": "/registry/pods/"},
	} {
		if _, ok := after.Value(name, labels); !ok {
			t.Errorf("/metrics has no %s series with %v", name, labels)
		}
	}
}

func scrapeMetrics(t *testing.T, s *testServer) promscrape.Families {
	t.Helper()
	families, err := promscrape.Get(http.DefaultClient, s.url+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return families
}
