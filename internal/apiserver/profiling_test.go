package apiserver

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
)

// bearerUsers authenticates "Bearer admin" as a member of system:masters
// and "Bearer nobody" as an authenticated user with no rights.
var bearerUsers = authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
	switch req.Header.Get("Authorization") {
	case "Bearer admin":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}}, true, nil
	case "Bearer nobody":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "nobody", Groups: []string{user.AllAuthenticated}}}, true, nil
	}
	return nil, false, nil
})

func newProfilingServer(t *testing.T, enabled bool) *testServer {
	return newTestServerWith(t, func(c *Config) {
		c.Authenticator = bearerUsers
		c.Authorizer = authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)
		c.EnableProfiling = enabled
	})
}

func getAs(t *testing.T, url, who string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+who)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, body
}

func TestProfilingIsOffByDefault(t *testing.T) {
	t.Parallel()
	s := newProfilingServer(t, false)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
		if code, body := getAs(t, s.url+path, "admin"); code != http.StatusNotFound {
			t.Errorf("GET %s as admin with profiling off: %d %s, want 404", path, code, body)
		}
	}
}

func TestProfilingServesAdminsOnly(t *testing.T) {
	t.Parallel()
	s := newProfilingServer(t, true)

	code, heap := getAs(t, s.url+"/debug/pprof/heap", "admin")
	if code != http.StatusOK {
		t.Fatalf("GET heap profile as admin: %d %s", code, heap)
	}
	// A pprof profile is a gzip-compressed protocol buffer.
	zr, err := gzip.NewReader(bytes.NewReader(heap))
	if err != nil {
		t.Fatalf("heap profile is not gzip: %v", err)
	}
	if raw, err := io.ReadAll(zr); err != nil || len(raw) == 0 {
		t.Fatalf("heap profile: %d bytes after gunzip, err %v", len(raw), err)
	}
	if code, index := getAs(t, s.url+"/debug/pprof/", "admin"); code != http.StatusOK || !strings.Contains(string(index), "goroutine") {
		t.Errorf("GET index as admin: %d, want 200 listing the profiles", code)
	}

	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1"} {
		if code, body := getAs(t, s.url+path, "nobody"); code != http.StatusForbidden {
			t.Errorf("GET %s as a user without rights: %d %s, want 403", path, code, body)
		}
		if code, _ := getAs(t, s.url+path, "stranger"); code != http.StatusUnauthorized {
			t.Errorf("GET %s unauthenticated: %d, want 401", path, code)
		}
	}
}
