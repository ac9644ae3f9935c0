package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"net/http"
	"time"

	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/utils/clock"
)

// Verified client-certificate chains are remembered for at most
// verifiedChainTTL (the success TTL kube-apiserver gives its token cache),
// so that a CA rotation, which replaces the authenticator's roots on
// restart, or a certificate's expiry takes effect within seconds, and at
// most verifiedChainCacheSize chains are kept (least recently used go
// first): every node, component and user presents one chain, so this holds
// a large cluster's clients in a few MiB.
const (
	verifiedChainTTL       = 10 * time.Second
	verifiedChainCacheSize = 4096
)

// cachedX509 is upstream's x509 authenticator with a cache in front:
// profiles of berth server showed ~10% of its CPU verifying the same
// client chains' signatures on every request of long-lived connections.
// k8s.io/apiserver offers no caching for x509 (only for tokens), so this
// wraps its authenticator and keeps the user it returned, keyed by a hash
// of the presented chain's raw bytes. Only successes are cached: a refused
// chain is verified again every time.
type cachedX509 struct {
	verify authenticator.Request
	cache  *utilcache.LRUExpireCache
	clock  clock.PassiveClock
}

// newX509Authenticator authenticates requests by a client certificate that
// chains to roots, naming the user after its subject (CN user, O groups),
// verifying at clk's time.
func newX509Authenticator(roots *x509.CertPool, clk clock.PassiveClock) *cachedX509 {
	opts := x509request.DefaultVerifyOptions()
	opts.Roots = roots
	verifyNow := func() (x509.VerifyOptions, bool) {
		at := opts // a shallow copy per request, as upstream's own option funcs give
		at.CurrentTime = clk.Now()
		return at, true
	}
	return &cachedX509{
		verify: x509request.NewDynamic(verifyNow, x509request.CommonNameUserConversion),
		cache:  utilcache.NewLRUExpireCacheWithClock(verifiedChainCacheSize, clk),
		clock:  clk,
	}
}

// AuthenticateRequest implements authenticator.Request.
func (c *cachedX509) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	key := chainKey(req.TLS.PeerCertificates)
	if cached, ok := c.cache.Get(key); ok {
		resp := *cached.(*authenticator.Response) // callers get their own copy
		return &resp, true, nil
	}
	resp, ok, err := c.verify.AuthenticateRequest(req)
	if err != nil || !ok {
		return resp, ok, err
	}
	now := c.clock.Now()
	if ttl := min(earliestExpiry(req.TLS.PeerCertificates).Sub(now), verifiedChainTTL); ttl > 0 {
		stored := *resp
		c.cache.Add(key, &stored, ttl)
	}
	return resp, true, nil
}

// chainKey hashes the presented certificates' DER bytes, each preceded by
// its length so that no two different chains share a key.
func chainKey(chain []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	var size [8]byte
	for _, cert := range chain {
		binary.BigEndian.PutUint64(size[:], uint64(len(cert.Raw)))
		h.Write(size[:])
		h.Write(cert.Raw)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// earliestExpiry is when the first presented certificate expires: a cached
// verification must not outlive the client's certificates (a root's own
// expiry is caught within verifiedChainTTL).
func earliestExpiry(chain []*x509.Certificate) time.Time {
	earliest := chain[0].NotAfter
	for _, cert := range chain[1:] {
		if cert.NotAfter.Before(earliest) {
			earliest = cert.NotAfter
		}
	}
	return earliest
}
