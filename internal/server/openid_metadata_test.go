package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/testkit/jwks"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestServiceAccountIssuerDiscovery checks what the conformance suite's
// OIDC discovery test does from a pod: with only its own token, a service
// account reads the issuer's discovery document (the token's issuer, a key
// set URL at this server) and, at that URL, the key that verifies its token.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := context.Background()
	if _, err := srv.Admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "relying"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := srv.Admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "relying", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"oidc-discovery-test"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	// The account's token for the API: the audience above is not the API's.
	apiToken, err := srv.Admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "relying", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	account := srv.BearerClient(t, apiToken.Status.Token)

	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	// The default binding of system:service-account-issuer-discovery lets
	// every service account read it, once the server has created it.
	wait.Until(t, time.Minute, "the discovery document, read as the service account", func() bool {
		return getJSON(ctx, account, "/.well-known/openid-configuration", &doc) == nil
	})
	parsed, err := jwt.ParseSigned(tr.Status.Token, []jose.SignatureAlgorithm{jose.ES256, jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	var unverified jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		t.Fatal(err)
	}
	if doc.Issuer != unverified.Issuer {
		t.Errorf("discovery names issuer %q, tokens %q", doc.Issuer, unverified.Issuer)
	}
	// Pods read the document at the issuer's own URL, through the
	// kubernetes Service: the serving certificate must cover its name.
	issuerURL, err := url.Parse(doc.Issuer)
	if err != nil {
		t.Fatalf("issuer %q: %v", doc.Issuer, err)
	}
	if err := servingCertificate(t, srv.URL).VerifyHostname(issuerURL.Hostname()); err != nil {
		t.Errorf("the serving certificate does not cover the issuer: %v", err)
	}
	jwksURI, err := url.Parse(doc.JWKSURI)
	if err != nil {
		t.Fatalf("jwks_uri %q: %v", doc.JWKSURI, err)
	}
	// The advertised address, as the kubernetes Service's endpoints have it.
	var advertised string
	wait.Until(t, time.Minute, "the kubernetes Service's endpoints", func() bool {
		ep, err := srv.Admin.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 || len(ep.Subsets[0].Ports) == 0 {
			return false
		}
		advertised = net.JoinHostPort(ep.Subsets[0].Addresses[0].IP, strconv.Itoa(int(ep.Subsets[0].Ports[0].Port)))
		return true
	})
	if jwksURI.Scheme != "https" || jwksURI.Host != advertised {
		t.Errorf("jwks_uri %q, want this server's advertised address %s", doc.JWKSURI, advertised)
	}
	var keys jose.JSONWebKeySet
	if err := getJSON(ctx, account, jwksURI.Path, &keys); err != nil {
		t.Fatal(err)
	}
	claims, err := jwks.Verify(keys, tr.Status.Token)
	if err != nil {
		t.Fatal(err)
	}
	if err := claims.Validate(jwt.Expected{Issuer: doc.Issuer, AnyAudience: jwt.Audience{"oidc-discovery-test"}}); err != nil {
		t.Errorf("token claims: %v", err)
	}
}

// servingCertificate is the certificate the server at serverURL presents.
func servingCertificate(t *testing.T, serverURL string) *x509.Certificate {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true}) // only its names are read
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

func getJSON(ctx context.Context, cs kubernetes.Interface, path string, into any) error {
	raw, err := cs.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("GET %s: %w in %s", path, err, raw)
	}
	return nil
}
