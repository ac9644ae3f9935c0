package nodeserver

import (
	"io"
	"net/http"
	"testing"

	"github.com/berth/berth/internal/pki"
)

// TestNodeServerAuth serves the real handler over TLS with certificates
// from real CAs and checks who gets in.
func TestNodeServerAuth(t *testing.T) {
	s := startTLSServer(t, Config{})
	url := s.base + "/healthz"
	for _, tc := range []struct {
		name string
		c    *http.Client
		want int
	}{
		{"no certificate", s.anonymous(), http.StatusUnauthorized},
		{"node identity", s.node(), http.StatusForbidden},
		{"api server", s.apiServer(), http.StatusOK},
		{"admin", s.admin(), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.c.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d (%s), want %d", resp.StatusCode, body, tc.want)
			}
		})
	}
	// A certificate from a CA the node does not trust is not presented (the
	// server names its CAs) or fails the handshake: never let in.
	if resp, err := s.client(s.otherCA, &pki.AdminIdentity).Get(url); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("certificate from an untrusted CA: status %d, want 401", resp.StatusCode)
		}
	}
}
