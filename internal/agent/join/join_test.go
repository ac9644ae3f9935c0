package join_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/retry"

	"github.com/berth/berth/internal/agent/join"
	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/wait"
)

// testServer is a real berth server (embedded etcd, controllers, no local
// agent) on a loopback port, run in-process.
type testServer struct {
	url, dataDir string
	admin        kubernetes.Interface
	token        bootstraptoken.JoinToken // the default one from DATA_DIR/token
}

func startServer(t *testing.T, lifetime time.Duration) *testServer {
	t.Helper()
	srv := cluster.InProcess(t, "", func(ctx context.Context, dataDir string, port int) error {
		return server.Run(ctx, server.Config{
			DataDir: dataDir, BindAddress: "127.0.0.1", Port: port, DisableAgent: true,
			NodeCertificateLifetime: lifetime, Logger: testLogger(t),
		})
	})
	s := &testServer{url: srv.URL, dataDir: srv.DataDir, admin: srv.Admin, token: srv.JoinToken(t)}
	if st, _ := os.Stat(filepath.Join(s.dataDir, "token")); st.Mode().Perm() != 0o600 {
		t.Errorf("DATA_DIR/token mode %v, want 0600", st.Mode().Perm())
	}
	return s
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitFor polls cond until it holds or the test's patience ends.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.Until(t, 3*time.Minute, what, cond)
}

func (s *testServer) joinConfig(t *testing.T, node string, token *bootstraptoken.JoinToken) join.Config {
	return join.Config{Server: s.url, Token: token, NodeName: node, Dir: filepath.Join(t.TempDir(), node), Logger: testLogger(t)}
}

func (s *testServer) csrs(t *testing.T) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	l, err := s.admin.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// nodeClient is what the agent uses after joining: only the kubeconfig the join wrote.
func nodeClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	restCfg.Timeout = 30 * time.Second
	return kubernetes.NewForConfigOrDie(restCfg)
}

// currentCert is the node certificate the join or a renewal stored.
func currentCert(t *testing.T, dir string) *tls.Certificate {
	t.Helper()
	cert, err := loadCurrentCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func loadCurrentCert(dir string) (*tls.Certificate, error) {
	pair := filepath.Join(dir, "pki", "node-client-current.pem")
	cert, err := tls.LoadX509KeyPair(pair, pair)
	return &cert, err
}

func assertPrivate(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path) // follows the current-pair symlink
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, st.Mode().Perm())
	}
}

// registerReady makes the joined node register itself and report Ready, as the agent does.
func registerReady(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("joined node creates its own Node: %v", err)
	}
	// The server's controllers write the new Node too (its taints, its
	// podCIDR): a stale update is read again and retried, as agents do.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
		_, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if current, getErr := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); getErr == nil {
				n = current
			}
		}
		return err
	})
	if err != nil {
		t.Fatalf("joined node updates its own Node's status: %v", err)
	}
}

func TestJoin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startServer(t, 0)
	clientCA, err := pki.LoadOrCreateCA(filepath.Join(s.dataDir, "pki"), "client-ca")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a wrong CA pin is refused before the token is sent", func(t *testing.T) {
		wrong := s.token
		wrong.CAHash = "sha256:" + strings.Repeat("00", 32)
		cfg := s.joinConfig(t, "node-x", &wrong)
		_, err := join.Ensure(ctx, cfg)
		if !errors.Is(err, join.ErrPinMismatch) {
			t.Fatalf("Ensure = %v, want ErrPinMismatch", err)
		}
		if n := len(s.csrs(t)); n != 0 {
			t.Errorf("%d CSRs exist after a refused pin", n)
		}
		if _, err := os.Stat(join.KubeconfigPath(cfg.Dir)); err == nil {
			t.Error("a kubeconfig was written")
		}
	})

	dirA := filepath.Join(t.TempDir(), "node-a") // outlives the subtest: the restart below reuses it
	t.Run("the default token joins a node that then acts as itself", func(t *testing.T) {
		cfg := s.joinConfig(t, "node-a", &s.token)
		cfg.Dir = dirA
		kubeconfig, err := join.Ensure(ctx, cfg)
		if err != nil {
			t.Fatalf("join: %v", err)
		}
		assertPrivate(t, kubeconfig)
		assertPrivate(t, filepath.Join(cfg.Dir, "pki", "node-client-current.pem"))
		leaf := currentCert(t, cfg.Dir).Leaf
		if leaf.Subject.CommonName != "system:node:node-a" || strings.Join(leaf.Subject.Organization, ",") != "system:nodes" {
			t.Errorf("certificate subject = %v", leaf.Subject)
		}
		if err := leaf.CheckSignatureFrom(clientCA.Cert); err != nil {
			t.Errorf("certificate not from the client CA: %v", err)
		}
		csrs := s.csrs(t)
		if len(csrs) != 1 || csrs[0].Spec.Username != "system:bootstrap:"+s.token.ID() ||
			csrs[0].Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
			t.Fatalf("CSRs = %+v", csrs)
		}
		registerReady(ctx, t, nodeClient(t, kubeconfig), "node-a")
	})

	t.Run("a restart with a valid certificate does not join again", func(t *testing.T) {
		before := len(s.csrs(t))
		cfg := s.joinConfig(t, "node-a", nil) // no token at all
		cfg.Dir = dirA
		kubeconfig, err := join.Ensure(ctx, cfg)
		if err != nil {
			t.Fatalf("Ensure without a token on a joined node: %v", err)
		}
		if _, err := nodeClient(t, kubeconfig).CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{}); err != nil {
			t.Errorf("node reads its own Node: %v", err)
		}
		if after := len(s.csrs(t)); after != before {
			t.Errorf("CSRs went from %d to %d", before, after)
		}
	})

	t.Run("a token cannot take over a Ready node", func(t *testing.T) {
		_, err := join.Ensure(ctx, s.joinConfig(t, "node-a", &s.token))
		if err == nil || !strings.Contains(err.Error(), "already exists and is Ready") {
			t.Fatalf("Ensure = %v, want a denial naming the Ready node", err)
		}
	})

	t.Run("a new token joins another node; once deleted it is refused", func(t *testing.T) {
		tok, err := bootstraptoken.Create(ctx, s.admin, time.Hour, "test", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		jt := &bootstraptoken.JoinToken{CAHash: s.token.CAHash, Token: tok.String()}
		if _, err := join.Ensure(ctx, s.joinConfig(t, "node-b", jt)); err != nil {
			t.Fatalf("join with a fresh token: %v", err)
		}
		if err := bootstraptoken.Delete(ctx, s.admin, tok.ID); err != nil {
			t.Fatal(err)
		}
		bearer := kubernetes.NewForConfigOrDie(&rest.Config{Host: s.url, BearerToken: tok.String(),
			TLSClientConfig: rest.TLSClientConfig{CAData: s.caPEM(t)}})
		waitFor(t, "the deleted token to be refused", func() bool {
			_, err := bearer.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{}, metav1.CreateOptions{})
			return apierrors.IsUnauthorized(err)
		})
		before := len(s.csrs(t))
		// The token is known deleted (refused above): no need to wait
		// the default 30 s for a new token to reach the server.
		refused := s.joinConfig(t, "node-c", jt)
		refused.TokenSettle = 2 * time.Second
		_, err = join.Ensure(ctx, refused)
		if err == nil || !strings.Contains(err.Error(), "refused the join token") {
			t.Fatalf("Ensure with a deleted token = %v", err)
		}
		if after := len(s.csrs(t)); after != before {
			t.Errorf("a deleted token created a CSR (%d → %d)", before, after)
		}
	})
}

// The upstream kubelet's TLS bootstrap, step by step as it does it: a
// bootstrap kubeconfig with the bare token and the CA, an RSA key, usages
// with key encipherment, a CSR named node-csr-*, and client-go's wait.
func TestUpstreamKubeletStyleBootstrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startServer(t, 0)
	bootstrap := kubernetes.NewForConfigOrDie(&rest.Config{Host: s.url, BearerToken: s.token.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.caPEM(t)}})
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	request, err := certutil.MakeCSR(key, &pkix.Name{CommonName: "system:node:kubelet-1", Organization: []string{"system:nodes"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	var name string
	var uid types.UID
	waitFor(t, "the CSR accepted (the server's RBAC defaults settle at first start)", func() bool {
		name, uid, err = csr.RequestCertificateWithContext(ctx, bootstrap, request, "node-csr-kubelet-1",
			certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
		return err == nil
	})
	certPEM, err := csr.WaitForCertificate(ctx, bootstrap, name, uid)
	if err != nil {
		t.Fatalf("wait for the certificate: %v", err)
	}
	certs, err := pki.ParseCertificates(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if certs[0].Subject.CommonName != "system:node:kubelet-1" || !certs[0].PublicKey.(*rsa.PublicKey).Equal(&key.PublicKey) {
		t.Errorf("issued %v for another key or subject", certs[0].Subject)
	}
}

func (s *testServer) caPEM(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.dataDir, "server-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Renewal: with short-lived certificates the agent's renewer replaces its
// certificate through a CSR that it authenticates with the current one.
func TestRenewalIssuesANewCertificate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startServer(t, time.Minute)
	cfg := s.joinConfig(t, "node-r", &s.token)
	if _, err := join.Ensure(ctx, cfg); err != nil {
		t.Fatalf("join: %v", err)
	}
	first := currentCert(t, cfg.Dir).Leaf

	// Issued certificates are backdated five minutes, so a one-minute
	// lifetime is past its renewal point at once and the manager renews
	// continually. Its store swaps the current-pair symlink by removing it
	// first: the wait tolerates that gap, and the checks run after renewal
	// has stopped.
	renewCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- join.Renew(renewCtx, cfg.Dir, cfg.NodeName, testLogger(t)) }()
	waitFor(t, "a renewed certificate", func() bool {
		cert, err := loadCurrentCert(cfg.Dir)
		return err == nil && cert.Leaf.SerialNumber.Cmp(first.SerialNumber) != 0
	})
	stop()
	if err := <-done; err != nil {
		t.Errorf("Renew: %v", err)
	}
	renewed := currentCert(t, cfg.Dir)
	if renewed.Leaf.Subject.CommonName != "system:node:node-r" {
		t.Errorf("renewed certificate subject = %v", renewed.Leaf.Subject)
	}
	if renewed.Leaf.PublicKeyAlgorithm == first.PublicKeyAlgorithm && renewed.Leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(first.PublicKey) {
		t.Error("renewal kept the old key")
	}
	var fromNode bool
	for _, c := range s.csrs(t) {
		fromNode = fromNode || c.Spec.Username == "system:node:node-r"
	}
	if !fromNode {
		t.Error("no CSR was authenticated as system:node:node-r (renewal must use the current certificate, not the token)")
	}
	// A fresh client from the kubeconfig uses the renewed pair.
	if _, err := nodeClient(t, join.KubeconfigPath(cfg.Dir)).CoreV1().Nodes().Create(ctx,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-r"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("node creates its Node with the renewed certificate: %v", err)
	}
}
