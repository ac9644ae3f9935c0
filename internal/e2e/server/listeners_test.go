package server

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/procnet"
	"github.com/berth/berth/internal/testkit/wait"
)

// The server process listens on its API port and nothing else: the
// embedded etcd has no client, peer or metrics listener.
func TestServerListensOnlyOnItsAPIPort(t *testing.T) {
	srv := cluster.Start(t, berthBin, cluster.Options{})
	port := srv.Port
	got, err := procnet.Listening(srv.Pid())
	if err != nil {
		t.Fatal(err)
	}
	want := "tcp 0100007F" + procnet.TCPPort(port) // 127.0.0.1:port
	if len(got) != 1 || got[0] != want {
		t.Fatalf("berth server listens on %v; want only %s", got, want)
	}

	// Anonymous clients reach health and version, and get 401 elsewhere.
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	status := func(path string) int {
		resp, err := anon.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The RBAC binding that allows it is served once the server's RBAC watch has synced.
	wait.Until(t, time.Minute, "anonymous /healthz to answer 200", func() bool {
		return status("/healthz") == http.StatusOK
	})
	for path, want := range map[string]int{"/livez": 200, "/readyz": 200, "/version": 200, "/api/v1/namespaces": 401, "/metrics": 401, "/berth/v1/snapshot": 401} {
		if got := status(path); got != want {
			t.Errorf("anonymous GET %s: %d, want %d", path, got, want)
		}
	}
}
