package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestClusterIsReusedAcrossStarts(t *testing.T) {
	dir := t.TempDir()
	names := ServingNames{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}
	first, err := LoadOrCreateCluster(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	serving1, _ := os.ReadFile(first.ServingCertFile)
	second, err := LoadOrCreateCluster(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	serving2, _ := os.ReadFile(second.ServingCertFile)
	if !first.ServerCA.Cert.Equal(second.ServerCA.Cert) || !first.ClientCA.Cert.Equal(second.ClientCA.Cert) {
		t.Error("CAs changed across restarts")
	}
	if string(serving1) != string(serving2) {
		t.Error("serving certificate reissued although it still covers the names")
	}
	if first.ServerCA.Cert.Equal(first.ClientCA.Cert) {
		t.Error("server and client trust domains share a CA")
	}
	st, err := os.Stat(filepath.Join(dir, "server-ca.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("CA key mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
}

func TestServingCertificateReissuedForNewSAN(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadOrCreateCluster(dir, ServingNames{DNSNames: []string{"localhost"}}); err != nil {
		t.Fatal(err)
	}
	c, err := LoadOrCreateCluster(dir, ServingNames{DNSNames: []string{"localhost", "api.example.test"}})
	if err != nil {
		t.Fatal(err)
	}
	certs, _, _, err := LoadKeyPair(c.ServingCertFile, c.ServingKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := certs[0].VerifyHostname("api.example.test"); err != nil {
		t.Errorf("new SAN not covered: %v", err)
	}
}

// A kubeconfig issued by the cluster authenticates over real TLS against a
// server that trusts only the client CA, and the identity arrives intact.
func TestClientKubeconfigAuthenticatesOverTLS(t *testing.T) {
	c, err := LoadOrCreateCluster(t.TempDir(), ServingNames{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.LoadX509KeyPair(c.ServingCertFile, c.ServingKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(c.ClientCA.Cert)
	var gotCN string
	var gotOrgs []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotCN = r.TLS.PeerCertificates[0].Subject.CommonName
		gotOrgs = r.TLS.PeerCertificates[0].Subject.Organization
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()

	kc, err := c.ClientKubeconfig(srv.URL, AdminIdentity)
	if err != nil {
		t.Fatal(err)
	}
	restCfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := restTLS(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if gotCN != "berth-admin" || len(gotOrgs) != 1 || gotOrgs[0] != "system:masters" {
		t.Errorf("server saw CN=%q O=%v", gotCN, gotOrgs)
	}

	// A certificate from a foreign CA is refused by the same server.
	foreign, err := LoadOrCreateCluster(t.TempDir(), ServingNames{})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, _ := foreign.ClientCA.Issue(AdminIdentity)
	pair, _ := tls.X509KeyPair(certPEM, keyPEM)
	tlsCfg.GetClientCertificate = nil // client-go installs a callback that would win over Certificates
	tlsCfg.Certificates = []tls.Certificate{pair}
	if _, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}).Get(srv.URL); err == nil {
		t.Error("foreign-CA client certificate accepted")
	}
}

func TestPublicKeyHashIsStable(t *testing.T) {
	ca, err := LoadOrCreateCA(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	h := PublicKeyHash(ca.Cert)
	if len(h) != len("sha256:")+64 || h != PublicKeyHash(ca.Cert) {
		t.Errorf("hash %q", h)
	}
}

func TestKubeconfigMatches(t *testing.T) {
	c, err := LoadOrCreateCluster(t.TempDir(), ServingNames{})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := c.ClientKubeconfig("https://127.0.0.1:6443", AdminIdentity)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := LoadOrCreateCluster(t.TempDir(), ServingNames{})
	for name, tc := range map[string]struct {
		server string
		ca     *CA
		want   bool
	}{
		"same":          {"https://127.0.0.1:6443", c.ClientCA, true},
		"server moved":  {"https://127.0.0.1:7443", c.ClientCA, false},
		"other cluster": {"https://127.0.0.1:6443", other.ClientCA, false},
	} {
		if got := KubeconfigMatches(kc, tc.server, tc.ca); got != tc.want {
			t.Errorf("%s: KubeconfigMatches = %v, want %v", name, got, tc.want)
		}
	}
	if KubeconfigMatches([]byte("not yaml: ["), "https://127.0.0.1:6443", c.ClientCA) {
		t.Error("garbage matched")
	}
}
