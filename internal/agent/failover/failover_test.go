package failover

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/pki"
)

// Two replicas serving certificates that name "kubernetes" (as every berth
// serving certificate does, among other names): requests go to the first
// until it stops, then to the second, through one client.
func TestRequestsMoveToTheNextReplica(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "ca")
	if err != nil {
		t.Fatal(err)
	}
	a, b := replica(t, ca, "a"), replica(t, ca, "b")
	cfg := &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM}}
	if err := Configure(cfg, []string{a.URL, b.URL}); err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, client, cfg.Host); got != "a" {
		t.Fatalf("first request reached %q, want a", got)
	}
	a.CloseClientConnections()
	a.Close()
	if got := get(t, client, cfg.Host); got != "b" {
		t.Fatalf("after a stopped, request reached %q, want b", got)
	}
}

func TestConfigureRejectsBadURLs(t *testing.T) {
	for _, servers := range [][]string{nil, {"http://127.0.0.1:1"}, {"https://"}, {"https://127.0.0.1:1", "::"}} {
		if err := Configure(&rest.Config{}, servers); err == nil {
			t.Errorf("Configure(%q) accepted", servers)
		}
	}
}

func TestNoReplicaReachable(t *testing.T) {
	d := &dialer{addrs: []string{closedAddr(t), closedAddr(t)}}
	if _, err := d.DialContext(context.Background(), "tcp", "ignored:1"); err == nil {
		t.Fatal("dial succeeded with no replica listening")
	}
}

func replica(t *testing.T, ca *pki.CA, name string) *httptest.Server {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(pki.Identity{CommonName: name, DNSNames: []string{ServerName}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, name) }))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
