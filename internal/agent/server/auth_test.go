package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth/berth/internal/pki"
)

// TestNodeServerAuth serves the real handler over TLS with certificates
// from real CAs and checks who gets in.
func TestNodeServerAuth(t *testing.T) {
	dir := t.TempDir()
	serverCA, err := pki.LoadOrCreateCA(dir, "server-ca")
	if err != nil {
		t.Fatal(err)
	}
	clientCA, err := pki.LoadOrCreateCA(dir, "client-ca")
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := pki.LoadOrCreateCA(dir, "other-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := serverCA.Issue(pki.Identity{CommonName: "system:node:n1", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tlsCfg, err := TLSConfig(write("node.crt", certPEM), write("node.key", keyPEM), write("client-ca.crt", clientCA.CertPEM))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, tlsCfg, Handler(Config{}), nil) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	url := "https://" + ln.Addr().String() + "/healthz"

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serverCA.CertPEM)
	client := func(ca *pki.CA, id *pki.Identity) *http.Client {
		cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if id != nil {
			c, k, err := ca.Issue(*id)
			if err != nil {
				t.Fatal(err)
			}
			pair, err := tls.X509KeyPair(c, k)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	for _, tc := range []struct {
		name string
		c    *http.Client
		want int
	}{
		{"no certificate", client(nil, nil), http.StatusUnauthorized},
		{"node identity", client(clientCA, &pki.Identity{CommonName: "system:node:n2", Organizations: []string{"system:nodes"}, Client: true}), http.StatusForbidden},
		{"api server", client(clientCA, &pki.APIServerClientIdentity), http.StatusOK},
		{"admin", client(clientCA, &pki.AdminIdentity), http.StatusOK},
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
	if resp, err := client(otherCA, &pki.AdminIdentity).Get(url); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("certificate from an untrusted CA: status %d, want 401", resp.StatusCode)
		}
	}
}
