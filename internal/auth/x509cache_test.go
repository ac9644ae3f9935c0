package auth

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"reflect"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth/berth/internal/pki"
)

// countingVerifier counts how often the real x509 authenticator runs.
type countingVerifier struct {
	next  authenticator.Request
	calls int
}

func (c *countingVerifier) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	c.calls++
	return c.next.AuthenticateRequest(req)
}

// newCountedX509 is the cached authenticator over ca's roots at a fake
// time, with its real verifications counted.
func newCountedX509(t *testing.T, ca *pki.CA) (*cachedX509, *countingVerifier, *clocktesting.FakeClock) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	clk := clocktesting.NewFakeClock(time.Now())
	a := newX509Authenticator(roots, clk)
	counted := &countingVerifier{next: a.verify}
	a.verify = counted
	return a, counted, clk
}

// requestWithShortCert presents a client certificate from ca that expires
// after validity.
func requestWithShortCert(t *testing.T, ca *pki.CA, id pki.Identity, validity time.Duration) *http.Request {
	t.Helper()
	key, _, err := pki.NewKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := ca.SignPublicKey(id, key.Public(), validity)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := pki.ParseCertificates(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1/api", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: certs}
	return req
}

func mustAuthenticate(t *testing.T, a authenticator.Request, req *http.Request) *authenticator.Response {
	t.Helper()
	resp, ok, err := a.AuthenticateRequest(req)
	if err != nil || !ok {
		t.Fatalf("authenticate = %v, %v; want a user", ok, err)
	}
	return resp
}

func TestCachedX509GivesTheVerifiedUserWithoutVerifyingAgain(t *testing.T) {
	ca := foreignCA(t) // any CA: it is this authenticator's only root
	a, counted, clk := newCountedX509(t, ca)
	req := requestWithCert(t, ca, pki.AdminIdentity)

	first := mustAuthenticate(t, a, req)
	second := mustAuthenticate(t, a, req)
	if counted.calls != 1 {
		t.Errorf("verified %d times for two requests with one chain, want 1", counted.calls)
	}
	if !reflect.DeepEqual(first, second) {
		t.Errorf("cached response %+v differs from the verified one %+v", second, first)
	}
	if second.User.GetName() != pki.AdminIdentity.CommonName || !reflect.DeepEqual(second.User.GetGroups(), pki.AdminIdentity.Organizations) {
		t.Errorf("user %s %v, want %s %v", second.User.GetName(), second.User.GetGroups(), pki.AdminIdentity.CommonName, pki.AdminIdentity.Organizations)
	}

	// Another certificate (same identity, new key) is a different chain.
	mustAuthenticate(t, a, requestWithCert(t, ca, pki.AdminIdentity))
	if counted.calls != 2 {
		t.Errorf("a new certificate was verified %d times in all, want 2", counted.calls)
	}

	// Past the TTL the chain is verified again, so a CA that stopped
	// being trusted stops working within it.
	clk.Step(verifiedChainTTL + time.Second)
	mustAuthenticate(t, a, req)
	if counted.calls != 3 {
		t.Errorf("after the TTL: %d verifications in all, want 3", counted.calls)
	}
}

func TestCachedX509RefusesAnExpiredCertificateThatWasCached(t *testing.T) {
	ca := foreignCA(t)
	a, counted, clk := newCountedX509(t, ca)
	validity := verifiedChainTTL / 2 // expires before the cache's TTL would
	req := requestWithShortCert(t, ca, pki.AdminIdentity, validity)

	mustAuthenticate(t, a, req)
	mustAuthenticate(t, a, req)
	if counted.calls != 1 {
		t.Fatalf("verified %d times while valid, want 1 (cached)", counted.calls)
	}
	clk.Step(validity + time.Second)
	if resp, ok, err := a.AuthenticateRequest(req); ok || err == nil {
		t.Fatalf("expired certificate: authenticate = %v, %v, %v; want refused with an error", resp, ok, err)
	}
	if counted.calls != 2 {
		t.Errorf("expired certificate answered from the cache (%d verifications in all, want 2)", counted.calls)
	}
}

func TestCachedX509RefusesAnotherCA(t *testing.T) {
	trusted := foreignCA(t)
	other, err := pki.LoadOrCreateCA(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	a, counted, _ := newCountedX509(t, trusted)
	mustAuthenticate(t, a, requestWithCert(t, trusted, pki.AdminIdentity)) // something cached

	impostor := requestWithCert(t, other, pki.AdminIdentity)
	for i := range 2 { // refusals are not cached: both are verified and refused
		if resp, ok, err := a.AuthenticateRequest(impostor); ok || err == nil {
			t.Fatalf("attempt %d: certificate from another CA: authenticate = %v, %v, %v; want refused", i+1, resp, ok, err)
		}
	}
	if counted.calls != 3 {
		t.Errorf("%d verifications, want 3 (one trusted, two refusals)", counted.calls)
	}

	noCert, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1/api", nil)
	if resp, ok, err := a.AuthenticateRequest(noCert); ok || err != nil {
		t.Errorf("request without a certificate: %v, %v, %v; want no opinion", resp, ok, err)
	}
}

func TestChainKeyDistinguishesChains(t *testing.T) {
	ca := foreignCA(t)
	leaf := requestWithCert(t, ca, pki.AdminIdentity).TLS.PeerCertificates[0]
	again, err := x509.ParseCertificate(leaf.Raw) // the same chain, presented on another connection
	if err != nil {
		t.Fatal(err)
	}
	if chainKey([]*x509.Certificate{leaf}) != chainKey([]*x509.Certificate{again}) {
		t.Error("one chain hashed to two keys")
	}
	if chainKey([]*x509.Certificate{leaf}) == chainKey([]*x509.Certificate{leaf, ca.Cert}) {
		t.Error("a chain and its extension share a key")
	}
}
