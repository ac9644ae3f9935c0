package apiserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// getAcceptingGzip sends GET path accepting gzip, as client-go does, and
// returns the response with its body unread and undecoded.
func getAcceptingGzip(t *testing.T, s *testServer, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("Accept", "application/json")
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	return resp
}

func TestWatchResponsesAreNotCompressed(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	// Enough content for a LIST above the server's 128 kB gzip threshold.
	filler := strings.Repeat("x", 4096)
	for i := range 40 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)}, Data: map[string]string{"filler": filler}}
		if _, err := s.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The server does compress large responses for clients that accept
	// gzip, so a missing Content-Encoding below is the watch handler's choice.
	if list := getAcceptingGzip(t, s, "/api/v1/namespaces/default/configmaps"); list.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("LIST of 160 kB accepting gzip: Content-Encoding %q, want gzip", list.Header.Get("Content-Encoding"))
	}

	for name, query := range map[string]string{
		"watch-list (client-go informers)": "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
		"plain watch":                      "watch=1&resourceVersion=0",
	} {
		t.Run(name, func(t *testing.T) {
			resp := getAcceptingGzip(t, s, "/api/v1/namespaces/default/configmaps?"+query)
			if enc := resp.Header.Get("Content-Encoding"); enc != "" {
				t.Fatalf("watch response Content-Encoding %q, want none", enc)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("watch response Content-Type %q, want application/json", ct)
			}
			// The stream is plain JSON events from the first byte.
			line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
			if err != nil {
				t.Fatalf("read first event: %v", err)
			}
			var ev metav1.WatchEvent
			if err := json.Unmarshal(line, &ev); err != nil || ev.Type != "ADDED" {
				t.Fatalf("first event %.80q: type %q, err %v; want an ADDED event", line, ev.Type, err)
			}
		})
	}
}
