package etcd_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/berth/berth/internal/store/etcd"
)

// testCA issues certificates for a TLS test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, dir: dir}
	writePEM(t, filepath.Join(dir, name+".crt"), "CERTIFICATE", der)
	return ca
}

// issue writes name.crt and name.key, signed by the CA; returns their paths.
func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage, ips ...net.IP) (string, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	crt, k := filepath.Join(ca.dir, name+".crt"), filepath.Join(ca.dir, name+".key")
	writePEM(t, crt, "CERTIFICATE", der)
	writePEM(t, k, "EC PRIVATE KEY", keyDER)
	return crt, k
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startTLSMember runs a real etcd member serving clients over mutual TLS on a
// loopback port and returns its https endpoint.
func startTLSMember(t *testing.T, pki string, ca *testCA) string {
	t.Helper()
	serverCrt, serverKey := ca.issue(t, "etcd-server", x509.ExtKeyUsageServerAuth, net.IPv4(127, 0, 0, 1))
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(t.TempDir(), "member")
	u, _ := url.Parse("https://127.0.0.1:0")
	cfg.ListenClientUrls = []url.URL{*u}
	cfg.AdvertiseClientUrls = []url.URL{*u}
	cfg.ListenPeerUrls = nil
	cfg.ClientTLSInfo.CertFile = serverCrt
	cfg.ClientTLSInfo.KeyFile = serverKey
	cfg.ClientTLSInfo.TrustedCAFile = filepath.Join(pki, "ca.crt")
	cfg.ClientTLSInfo.ClientCertAuth = true
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	<-e.Server.ReadyNotify()
	return "https://" + e.Clients[0].Addr().String()
}

func TestExternalOverMutualTLS(t *testing.T) {
	t.Parallel()
	pki := t.TempDir()
	ca := newTestCA(t, pki, "ca")
	endpoint := startTLSMember(t, pki, ca)
	clientCrt, clientKey := ca.issue(t, "berth-server", x509.ExtKeyUsageClientAuth)
	caFile := filepath.Join(pki, "ca.crt")
	ctx := context.Background()

	s, err := etcd.External(ctx, []string{endpoint}, caFile, clientCrt, clientKey, nil)
	if err != nil {
		t.Fatalf("connect with a valid client certificate: %v", err)
	}
	defer s.Close()
	rev, err := s.Create(ctx, "/registry/pods/ns/p", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if kv, err := s.Get(ctx, "/registry/pods/ns/p"); err != nil || kv.ModRevision != rev {
		t.Fatalf("get over TLS: %+v %v", kv, err)
	}

	// A certificate from another CA is refused by the member.
	other := newTestCA(t, t.TempDir(), "other-ca")
	strangerCrt, strangerKey := other.issue(t, "stranger", x509.ExtKeyUsageClientAuth)
	shortCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if s2, err := etcd.External(shortCtx, []string{endpoint}, caFile, strangerCrt, strangerKey, nil); err == nil {
		s2.Close()
		t.Fatal("a client certificate from an unknown CA was accepted")
	}

	bad := map[string]func() error{
		"plain http endpoint": func() error {
			_, err := etcd.External(ctx, []string{"http://127.0.0.1:2379"}, caFile, clientCrt, clientKey, nil)
			return err
		},
		"no client key": func() error {
			_, err := etcd.External(ctx, []string{endpoint}, caFile, clientCrt, "", nil)
			return err
		},
		"no endpoints": func() error {
			_, err := etcd.External(ctx, nil, caFile, clientCrt, clientKey, nil)
			return err
		},
	}
	for name, f := range bad {
		if err := f(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
