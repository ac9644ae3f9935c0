package node_test

import (
	"bufio"
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestJoinRefusals: credentials that must not work are refused, change
// nothing in the store, and leave a trace. Bad, expired and deleted tokens
// get 401, the server's log names the token and why, and the audit log has
// the 401. Certificates from a foreign CA or expired ones are refused in
// the TLS handshake (the server verifies client certificates when given,
// as internal/server does), which the server's HTTP error log records.
func TestJoinRefusals(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := c.client(t, pki.AdminIdentity)

	valid := c.newToken(t, admin, time.Hour)
	id, _, _ := strings.Cut(valid.Token, ".")
	expired := c.newToken(t, admin, -time.Hour)
	deleted := c.newToken(t, admin, time.Hour)
	deletedID, _, _ := strings.Cut(deleted.Token, ".")
	wait.Until(t, time.Minute, "the server to know the tokens", func() bool {
		_, err := c.bearer(deleted.Token).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return !apierrors.IsUnauthorized(err)
	})
	if err := bootstraptoken.Delete(ctx, admin, deletedID); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, "the server to forget the deleted token", func() bool {
		_, err := c.bearer(deleted.Token).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return apierrors.IsUnauthorized(err)
	})

	foreignCA, err := pki.LoadOrCreateCA(t.TempDir(), "foreign-ca")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		client    kubernetes.Interface
		handshake bool   // refused in the TLS handshake rather than with 401
		logged    string // in the server's log once more after the request
	}{
		{"a token with the wrong secret", c.bearer(id + ".0000000000000000"), false, refusedLog(id)},
		{"an unknown token", c.bearer("zzzzzz.0123456789abcdef"), false, refusedLog("zzzzzz")},
		{"an expired token", c.bearer(expired.Token), false, refusedLog(strings.SplitN(expired.Token, ".", 2)[0])},
		{"a deleted token", c.bearer(deleted.Token), false, refusedLog(deletedID)},
		{"a node certificate from a foreign CA", c.certClient(t, foreignCA, time.Hour), true, "certificate signed by unknown authority"},
		{"an expired node certificate from the cluster's CA", c.certClient(t, c.pki.ClientCA, -time.Minute), true, "certificate has expired"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, audited := c.revision(t), len(c.auditEvents(t, 401))
			logged := strings.Count(c.logs.String(), tc.logged)
			_, err := tc.client.CertificatesV1().CertificateSigningRequests().Create(ctx, csrFor(t, "", "node-x"), metav1.CreateOptions{})
			switch {
			case tc.handshake && (err == nil || !strings.Contains(err.Error(), "tls: ")):
				t.Fatalf("err = %v, want a TLS handshake refusal", err)
			case !tc.handshake && !apierrors.IsUnauthorized(err):
				t.Fatalf("err = %v, want 401", err)
			}
			if after := c.revision(t); after != before {
				t.Errorf("store revision moved %d -> %d", before, after)
			}
			wantAudited := audited + 1
			if tc.handshake {
				wantAudited = audited // no request reached the API
			}
			if n := len(c.auditEvents(t, 401)); n != wantAudited {
				t.Errorf("audit log has %d 401 events, want %d", n, wantAudited)
			}
			wait.Until(t, time.Minute, "the server to log "+tc.logged, func() bool { return strings.Count(c.logs.String(), tc.logged) > logged })
		})
	}
}

// TestJoinedNodeCannotGetAnotherNodesCertificate: with the approver and
// signer running, a joined node asking for node-b's certificate is denied
// with a reason, as is a join token replayed to take over a Ready node.
func TestJoinedNodeCannotGetAnotherNodesCertificate(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := c.client(t, pki.AdminIdentity)
	defer c.runCertificates(t)()
	token := c.newToken(t, admin, time.Hour)
	nodeA := c.join(t, "node-a", token)
	register(ctx, t, nodeA, "node-a")

	t.Run("node-a asks for node-b's certificate", func(t *testing.T) {
		key, _, err := pki.NewKeyPEM()
		if err != nil {
			t.Fatal(err)
		}
		request, err := certutil.MakeCSR(key, &pkix.Name{CommonName: "system:node:node-b", Organization: []string{"system:nodes"}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		name, uid, err := csr.RequestCertificateWithContext(ctx, nodeA, request, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil,
			[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, key)
		if err != nil {
			t.Fatalf("node-a may send a CSR (the approver judges it): %v", err)
		}
		_, err = csr.WaitForCertificate(ctx, nodeA, name, uid)
		if err == nil || !strings.Contains(err.Error(), "denied") {
			t.Fatalf("wait = %v, want a denial", err)
		}
		got, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !denied(got, "may not request") || len(got.Status.Certificate) != 0 {
			t.Errorf("CSR status = %+v, want Denied naming the rule and no certificate", got.Status)
		}
	})

	t.Run("the join token replayed to take over the Ready node-a", func(t *testing.T) {
		_, err := c.tryJoin(t, "node-a", token)
		if err == nil || !strings.Contains(err.Error(), "already exists and is Ready") {
			t.Fatalf("join = %v, want a denial naming the Ready node", err)
		}
	})
}

// denied reports whether csr carries a Denied condition whose message has want.
func denied(csr *certificatesv1.CertificateSigningRequest, want string) bool {
	for _, cond := range csr.Status.Conditions {
		if cond.Type == certificatesv1.CertificateDenied && cond.Status == corev1.ConditionTrue && strings.Contains(cond.Message, want) {
			return true
		}
	}
	return false
}

// bearer talks to the cluster with a bearer token, trusting its CA.
func (c *cluster) bearer(token string) kubernetes.Interface {
	return newClient(&rest.Config{Host: c.url, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.ServerCA.CertPEM}})
}

// certClient presents a node-a certificate that ca signed for validity
// (negative: expired already).
func (c *cluster) certClient(t *testing.T, ca *pki.CA, validity time.Duration) kubernetes.Interface {
	t.Helper()
	key, keyPEM, err := pki.NewKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := ca.SignPublicKey(pki.NodeIdentity("node-a"), key.Public(), validity)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := pki.Kubeconfig(pki.KubeconfigData{Server: c.url, CAPEM: c.pki.ServerCA.CertPEM, CertPEM: certPEM, KeyPEM: keyPEM, UserName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	return newClient(cfg)
}

// auditEvents are the audit log's events with response code.
func (c *cluster) auditEvents(t *testing.T, code int32) []auditv1.Event {
	t.Helper()
	f, err := os.Open(filepath.Clean(c.auditLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditv1.Event
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for lines.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("audit line is not an event: %v", errors.Join(err, errors.New(lines.Text())))
		}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == code {
			out = append(out, ev)
		}
	}
	return out
}

// refusedLog is the server's warning when it refuses bootstrap token id.
func refusedLog(id string) string {
	return `msg="bootstrap token refused (unknown, expired, deleted or not for authentication)" tokenID=` + id
}
