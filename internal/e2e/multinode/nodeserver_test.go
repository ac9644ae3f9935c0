package multinode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/pki"
)

// kubectl runs `berth kubectl` with the admin kubeconfig inside the bridge's
// namespace, where the API server listens, and returns its output.
func (c *cluster) kubectl(args ...string) string {
	c.t.Helper()
	return c.server.Kubectl(c.t, "", args...)
}

// servingCertificate waits for node's serving certificate (the agent's
// kubelet-serving CSR, signed) and returns it.
func (c *cluster) servingCertificate(node string) *x509.Certificate {
	c.t.Helper()
	pair := filepath.Join(c.agentDir[node], "pki", "node-server-current.pem")
	var cert *x509.Certificate
	c.poll(node+"'s serving certificate", 2*time.Minute, func(context.Context) (bool, error) {
		tc, err := tls.LoadX509KeyPair(pair, pair)
		if err != nil {
			return false, nil
		}
		cert = tc.Leaf
		return true, nil
	})
	if st, err := os.Stat(pair); err != nil || st.Mode().Perm() != 0o600 {
		c.t.Errorf("%s: %v, want mode 0600", pair, err)
	}
	return cert
}

// checkServingCertificates: each joined node's serving certificate is for
// system:node:NAME, server auth only, valid for its name and address
// against the node serving CA (and not against the CA clients pin for the
// API server), and was requested by the node itself.
func (c *cluster) checkServingCertificates(ctx context.Context) {
	c.t.Helper()
	nodeServingCA := c.caPool("node-serving-ca.crt")
	serverCA := c.caPool("server-ca.crt")
	for _, node := range nodeNames {
		cert := c.servingCertificate(node)
		if cert.Subject.CommonName != "system:node:"+node || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
			c.t.Errorf("%s: subject %v, usages %v; want system:node:%s, server auth only", node, cert.Subject, cert.ExtKeyUsage, node)
		}
		for _, name := range []string{node, c.lan.nodeIP[node]} {
			if _, err := cert.Verify(x509.VerifyOptions{Roots: nodeServingCA, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				c.t.Errorf("%s's serving certificate does not verify for %s: %v", node, name, err)
			}
		}
		for _, other := range nodeNames {
			if other == node {
				continue
			}
			if err := cert.VerifyHostname(c.lan.nodeIP[other]); err == nil {
				c.t.Errorf("%s's serving certificate is valid for %s's address", node, other)
			}
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: serverCA}); err == nil {
			c.t.Errorf("%s's serving certificate verifies against the server CA, which clients pin for the API server", node)
		}
	}
	csrs, err := c.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	requesters := map[string]bool{}
	for _, r := range csrs.Items {
		if r.Spec.SignerName == certificatesv1.KubeletServingSignerName {
			requesters[r.Spec.Username] = true
		}
	}
	for _, node := range nodeNames {
		if !requesters["system:node:"+node] {
			c.t.Errorf("no kubelet-serving CSR from system:node:%s (from: %v)", node, requesters)
		}
	}
	if len(requesters) != len(nodeNames) {
		c.t.Errorf("kubelet-serving CSRs from %v, want only the three nodes", requesters)
	}
}

func (c *cluster) caPool(file string) *x509.CertPool {
	c.t.Helper()
	data, err := os.ReadFile(filepath.Join(c.serverDir, "pki", file))
	if err != nil {
		c.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		c.t.Fatalf("%s holds no certificate", file)
	}
	return pool
}

// checkNodeServerAdmitsOnlyTheAPIServer calls node's server from the
// bridge, verifying it by its address against the node serving CA: without
// a client certificate (401), with the node's own client certificate (403),
// and as the API server (200, /healthz).
func (c *cluster) checkNodeServerAdmitsOnlyTheAPIServer(ctx context.Context, node string) {
	c.t.Helper()
	n, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	url := "https://" + net.JoinHostPort(c.lan.nodeIP[node], strconv.Itoa(int(n.Status.DaemonEndpoints.KubeletEndpoint.Port))) + "/healthz"
	clientCA, err := pki.LoadOrCreateCA(filepath.Join(c.serverDir, "pki"), "client-ca")
	if err != nil {
		c.t.Fatal(err)
	}
	apiCertPEM, apiKeyPEM, err := clientCA.Issue(pki.APIServerClientIdentity)
	if err != nil {
		c.t.Fatal(err)
	}
	apiServer, err := tls.X509KeyPair(apiCertPEM, apiKeyPEM)
	if err != nil {
		c.t.Fatal(err)
	}
	nodePair := filepath.Join(c.agentDir[node], "pki", "node-client-current.pem")
	itself, err := tls.LoadX509KeyPair(nodePair, nodePair)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
		want int
	}{
		{"no client certificate", nil, http.StatusUnauthorized},
		{"the node's own client certificate", &itself, http.StatusForbidden},
		{"the API server's identity", &apiServer, http.StatusOK},
	} {
		if got, err := c.nodeServerStatus(ctx, url, node, tc.cert); err != nil || got != tc.want {
			c.t.Errorf("%s's node server, %s: status %d (%v), want %d", node, tc.name, got, err, tc.want)
		}
	}
}

func (c *cluster) nodeServerStatus(ctx context.Context, url, node string, cert *tls.Certificate) (int, error) {
	tlsCfg := &tls.Config{RootCAs: c.caPool("node-serving-ca.crt"), ServerName: c.lan.nodeIP[node], MinVersion: tls.VersionTLS12}
	if cert != nil {
		tlsCfg.Certificates = []tls.Certificate{*cert}
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: dialer(c.lan.bridgeNS), TLSClientConfig: tlsCfg}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
