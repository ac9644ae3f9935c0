package apiserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestControllerDebugServesEachLoopWhileItRuns: a page is served with its
// prefix stripped while its loop has it set, 503 before and after, and a
// loop's unset does not remove the page a newer run of it set.
func TestControllerDebugServesEachLoopWhileItRuns(t *testing.T) {
	d := NewControllerDebug()
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/controllers/garbagecollector/graph?uid=a", nil))
		body, _ := io.ReadAll(rec.Body)
		return rec.Code, string(body)
	}
	page := func(run string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, run+" "+r.URL.Path+" "+r.URL.Query().Get("uid"))
		})
	}
	if code, _ := get(); code != http.StatusServiceUnavailable {
		t.Fatalf("before the loop runs: %d, want 503", code)
	}
	unsetFirst := d.Set("garbagecollector", page("first"))
	if code, body := get(); code != http.StatusOK || body != "first /graph a" {
		t.Fatalf("while it runs: %d %q", code, body)
	}
	unsetSecond := d.Set("garbagecollector", page("second"))
	unsetFirst()
	if code, body := get(); code != http.StatusOK || body != "second /graph a" {
		t.Fatalf("after the first run's unset: %d %q, want the second run's page", code, body)
	}
	unsetSecond()
	if code, _ := get(); code != http.StatusServiceUnavailable {
		t.Fatalf("after the loop stopped: %d, want 503", code)
	}
}
