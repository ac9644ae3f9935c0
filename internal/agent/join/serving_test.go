package join_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/berth/berth/internal/agent/join"
	"github.com/berth/berth/internal/agent/nodeserver"
	"github.com/berth/berth/internal/pki"
)

// A joined node gets its node server's certificate through a kubelet-serving
// CSR sent as itself, for its name and the addresses its Node reports, signed
// by the CA the API server verifies node servers with (and that agents and
// kubeconfigs do not trust for the API server); it reads the API
// server's client CA from the published ConfigMap; its node server admits
// only the API server's client certificate; and a new address leads to a new
// certificate that the running server presents.
func TestJoinedNodeServesWithItsOwnCertificate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startServer(t, 0)
	cfg := s.joinConfig(t, "node-s", &s.token)
	kubeconfig, err := join.Ensure(ctx, cfg)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	client := nodeClient(t, kubeconfig)
	// Documentation addresses (RFC 5737): no other Node reports them.
	addrs := []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "198.51.100.7"},
		{Type: corev1.NodeHostName, Address: "host-s"},
	}
	reportAddresses(ctx, t, client, "node-s", addrs)

	caFile, err := join.FetchClientCA(ctx, client, cfg.Dir, testLogger(t))
	if err != nil {
		t.Fatalf("FetchClientCA: %v", err)
	}
	wantCA, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "client-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(caFile); string(got) != string(wantCA) {
		t.Errorf("%s holds %q, want the server's client CA", caFile, got)
	}
	assertPrivate(t, caFile)

	serving, err := join.NewServing(ctx, cfg.Dir, "node-s", testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := serving.GetCertificate(nil); err == nil {
		t.Fatal("a serving certificate before any was requested")
	}
	serving.SetAddresses(addrs)
	serving.Start()
	first := waitServingCert(t, serving, "198.51.100.7")
	assertPrivate(t, filepath.Join(cfg.Dir, "pki", "node-server-current.pem"))

	nodeServingPEM, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "node-serving-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	nodeServingCA := pool(t, nodeServingPEM)
	for _, name := range []string{"node-s", "host-s", "198.51.100.7"} {
		if _, err := first.Leaf.Verify(x509.VerifyOptions{Roots: nodeServingCA, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving certificate does not verify for %s against the node serving CA: %v", name, err)
		}
	}
	if _, err := first.Leaf.Verify(x509.VerifyOptions{Roots: pool(t, s.caPEM(t))}); err == nil {
		t.Error("a node's serving certificate verifies against the CA clients pin for the API server")
	}
	if first.Leaf.Subject.CommonName != "system:node:node-s" || !slices.Equal(first.Leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("subject %v, usages %v: want system:node:node-s, server auth only", first.Leaf.Subject, first.Leaf.ExtKeyUsage)
	}
	assertServingCSRFromNode(t, s, "system:node:node-s")

	base := serveNodeServer(t, serving, caFile)
	clientCA, err := pki.LoadOrCreateCA(filepath.Join(s.dataDir, "pki"), "client-ca")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		id   *pki.Identity
		want int
	}{
		{"no client certificate", nil, http.StatusUnauthorized},
		{"the node's own identity", &pki.Identity{CommonName: "system:node:node-s", Organizations: []string{"system:nodes"}, Client: true}, http.StatusForbidden},
		{"the API server", &pki.APIServerClientIdentity, http.StatusOK},
	} {
		if got := getStatus(t, base+"/healthz", nodeServingCA, "node-s", clientCA, tc.id); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}

	// The node moves: the new address is reported, then certified, and the
	// running server presents the new certificate.
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "198.51.100.8"})
	reportAddresses(ctx, t, client, "node-s", addrs)
	serving.SetAddresses(addrs)
	second := waitServingCert(t, serving, "198.51.100.8")
	if second.Leaf.SerialNumber.Cmp(first.Leaf.SerialNumber) == 0 {
		t.Fatal("no new certificate")
	}
	if got := getStatus(t, base+"/healthz", nodeServingCA, "198.51.100.8", clientCA, &pki.APIServerClientIdentity); got != http.StatusOK {
		t.Errorf("after rotation, the server does not present a certificate for the new address: status %d", got)
	}
}

// reportAddresses creates or updates the node's Node with addrs, as the agent's registration does.
func reportAddresses(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, addrs []corev1.NodeAddress) {
	t.Helper()
	if _, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
		if _, err = c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("node creates its Node: %v", err)
		}
	}
	// The server's controllers write the Node too: a stale update is read
	// again and retried, as agents do.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Addresses = addrs
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("node reports its addresses: %v", err)
	}
}

func waitServingCert(t *testing.T, s *join.Serving, ip string) *tls.Certificate {
	t.Helper()
	var cert *tls.Certificate
	waitFor(t, "a serving certificate for "+ip, func() bool {
		c, err := s.GetCertificate(nil)
		if err != nil || c.Leaf == nil {
			return false
		}
		cert = c
		return slices.ContainsFunc(c.Leaf.IPAddresses, func(a net.IP) bool { return a.String() == ip })
	})
	return cert
}

func assertServingCSRFromNode(t *testing.T, s *testServer, user string) {
	t.Helper()
	for _, c := range s.csrs(t) {
		if c.Spec.SignerName != certificatesv1.KubeletServingSignerName {
			continue
		}
		if c.Spec.Username != user {
			t.Errorf("serving CSR %s sent by %s, want %s", c.Name, c.Spec.Username, user)
		}
		return
	}
	t.Error("no kubelet-serving CSR")
}

func pool(t *testing.T, pemData []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemData) {
		t.Fatal("no CA certificate")
	}
	return p
}

// serveNodeServer runs the node server's real handler with the joined
// node's TLS on a loopback port and returns its base URL.
func serveNodeServer(t *testing.T, serving *join.Serving, clientCAFile string) string {
	t.Helper()
	tlsCfg, err := nodeserver.RotatingTLSConfig(serving.GetCertificate, clientCAFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- nodeserver.Serve(ctx, ln, tlsCfg, nodeserver.Handler(nodeserver.Config{}), nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node server: %v", err)
		}
	})
	return "https://" + ln.Addr().String()
}

// getStatus GETs url verifying the server as serverName against roots,
// presenting a fresh certificate for id from ca (none when id is nil).
func getStatus(t *testing.T, url string, roots *x509.CertPool, serverName string, ca *pki.CA, id *pki.Identity) int {
	t.Helper()
	tlsCfg := &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}
	if id != nil {
		certPEM, keyPEM, err := ca.Issue(*id)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		tlsCfg.Certificates = []tls.Certificate{pair}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s as %s: %v", url, serverName, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
