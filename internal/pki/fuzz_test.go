package pki

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

const fuzzServer = "https://127.0.0.1:6443"

// FuzzKubeconfig loads arbitrary kubeconfigs the ways berth does: the
// server's KubeconfigMatches on a kubeconfig it finds on disk at start-up,
// and the agent's and the CLI's clientcmd.BuildConfigFromFlags on the file
// named by --kubeconfig. A kubeconfig KubeconfigMatches accepts must point
// at the server with a certificate the client CA signed. Seeds are
// kubeconfigs from this cluster's PKI (added here) and hand-written edge
// cases (nil entries, dangling names, exec plugins) in testdata/fuzz.
func FuzzKubeconfig(f *testing.F) {
	c, err := LoadOrCreateCluster(f.TempDir(), ServingNames{})
	if err != nil {
		f.Fatal(err)
	}
	good, err := c.ClientKubeconfig(fuzzServer, AdminIdentity)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	tokenOnly, err := Kubeconfig(KubeconfigData{Server: fuzzServer, CAPEM: c.ServerCA.CertPEM, Token: "abcdef.0123456789abcdef", UserName: "t"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tokenOnly)
	f.Add([]byte("apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n"))
	f.Add([]byte("{}"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if KubeconfigMatches(data, fuzzServer, c.ClientCA) {
			checkMatch(t, data, c.ClientCA)
		}
		path := filepath.Join(dir, "kubeconfig")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err == nil && cfg.Host == "" {
			t.Fatalf("kubeconfig loaded with no server: %+v", cfg)
		}
		// berth kubectl: upstream's loading rules with KUBECONFIG=path.
		kubectl := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{Precedence: []string{path}}, &clientcmd.ConfigOverrides{})
		if cfg, err := kubectl.ClientConfig(); err == nil && cfg.Host == "" {
			t.Fatalf("kubectl loaded a kubeconfig with no server: %+v", cfg)
		}
		_, _, _ = kubectl.Namespace()
	})
}

// checkMatch re-derives, independently of KubeconfigMatches, that data
// names fuzzServer and a client certificate clientCA signed.
func checkMatch(t *testing.T, data []byte, clientCA *CA) {
	t.Helper()
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatalf("KubeconfigMatches accepted a kubeconfig clientcmd refuses: %v", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if cfg.Clusters[ctx.Cluster].Server != fuzzServer {
		t.Fatalf("accepted server %q", cfg.Clusters[ctx.Cluster].Server)
	}
	certs, err := ParseCertificates(cfg.AuthInfos[ctx.AuthInfo].ClientCertificateData)
	if err != nil || certs[0].CheckSignatureFrom(clientCA.Cert) != nil {
		t.Fatalf("accepted a client certificate the CA did not sign (%v)", err)
	}
}

// FuzzParsePEM feeds arbitrary PEM to ParseCertificates and ParseKey, which
// read the CA bundle the join discovery fetches and the key pairs in the
// data directory.
func FuzzParsePEM(f *testing.F) {
	ca, err := LoadOrCreateCA(f.TempDir(), "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(AdminIdentity)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(append([]byte{}, certPEM...), keyPEM...))
	f.Add(ca.CertPEM)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if certs, err := ParseCertificates(data); err == nil {
			if len(certs) == 0 {
				t.Fatal("no certificates and no error")
			}
			_ = PublicKeyHash(certs[0])
		}
		if key, err := ParseKey(data); err == nil && key.Public() == nil {
			t.Fatal("key without a public half")
		}
	})
}
