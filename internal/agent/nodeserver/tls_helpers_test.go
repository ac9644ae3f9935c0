package nodeserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth/berth/internal/pki"
)

// tlsServer is the real node server (Handler, TLSConfig, Serve) on a
// loopback port, with certificates from real CAs.
type tlsServer struct {
	t        *testing.T
	base     string // https://127.0.0.1:PORT
	serverCA *pki.CA
	clientCA *pki.CA // the CA the node trusts for client certificates
	otherCA  *pki.CA // one it does not trust
}

// startTLSServer serves Handler(cfg) until the test ends.
func startTLSServer(t *testing.T, cfg Config) *tlsServer {
	t.Helper()
	dir := t.TempDir()
	s := &tlsServer{t: t}
	for _, ca := range []struct {
		name string
		out  **pki.CA
	}{{"server-ca", &s.serverCA}, {"client-ca", &s.clientCA}, {"other-ca", &s.otherCA}} {
		var err error
		if *ca.out, err = pki.LoadOrCreateCA(dir, ca.name); err != nil {
			t.Fatal(err)
		}
	}
	certPEM, keyPEM, err := s.serverCA.Issue(pki.Identity{CommonName: "system:node:n1", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
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
	tlsCfg, err := TLSConfig(write("node.crt", certPEM), write("node.key", keyPEM), write("client-ca.crt", s.clientCA.CertPEM))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, tlsCfg, Handler(cfg), nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	s.base = "https://" + ln.Addr().String()
	return s
}

// client returns an HTTPS client that trusts the node's serving CA and
// presents a certificate for id issued by ca (none when id is nil).
func (s *tlsServer) client(ca *pki.CA, id *pki.Identity) *http.Client {
	s.t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(s.serverCA.CertPEM)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if id != nil {
		c, k, err := ca.Issue(*id)
		if err != nil {
			s.t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(c, k)
		if err != nil {
			s.t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}

// The identities the tests call with.
var (
	nodeIdentity = pki.Identity{CommonName: "system:node:n2", Organizations: []string{"system:nodes"}, Client: true}
)

func (s *tlsServer) apiServer() *http.Client {
	return s.client(s.clientCA, &pki.APIServerClientIdentity)
}
func (s *tlsServer) admin() *http.Client     { return s.client(s.clientCA, &pki.AdminIdentity) }
func (s *tlsServer) node() *http.Client      { return s.client(s.clientCA, &nodeIdentity) }
func (s *tlsServer) anonymous() *http.Client { return s.client(nil, nil) }
