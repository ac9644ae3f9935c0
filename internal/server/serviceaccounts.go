package server

import (
	"fmt"
	"net"
	"strconv"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	upstreamsa "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/auth/serviceaccount"
	"github.com/berth/berth/internal/pki"
)

// serviceAccountTokens issues tokens through serviceaccounts/token,
// authenticates them and publishes their issuer's OIDC discovery, with a
// signing key kept in DATA_DIR/pki so tokens outlive restarts.
type serviceAccountTokens struct {
	authn    authenticator.Token
	api      *apiserver.ServiceAccountTokens
	metadata upstreamsa.OpenIDMetadataProvider
}

func newServiceAccountTokens(cfg Config, lb *inprocess.Loopback) (*serviceAccountTokens, error) {
	key, err := serviceaccount.LoadOrCreateKey(cfg.path("pki", "service-account.key"))
	if err != nil {
		return nil, err
	}
	issuer, err := serviceaccount.NewIssuer(key, serviceaccount.DefaultIssuer)
	if err != nil {
		return nil, err
	}
	// The authenticator checks each token's bound objects through the API
	// as the server's own identity.
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("service-account token authenticator: %w", err)
	}
	audiences := []string{serviceaccount.DefaultIssuer}
	authn, err := serviceaccount.NewAuthenticator(&key.PublicKey, serviceaccount.DefaultIssuer, audiences, serviceaccount.ClientObjects{Client: client})
	if err != nil {
		return nil, err
	}
	metadata, err := serviceaccount.NewOpenIDMetadata(&key.PublicKey, serviceaccount.DefaultIssuer, cfg.externalAddress())
	if err != nil {
		return nil, err
	}
	return &serviceAccountTokens{
		authn: authn, metadata: metadata,
		api: &apiserver.ServiceAccountTokens{Issuer: issuer, Audiences: audiences},
	}, nil
}

// externalAddress is where clients outside the cluster reach this server
// (kube-apiserver's --external-hostname default: the advertised address
// and the secure port), which names the issuer's key set URL.
func (c *Config) externalAddress() string {
	ip, err := c.advertisedAddress()
	if err != nil {
		ip = net.IPv4(127, 0, 0, 1) // a loopback-only server
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(c.Port))
}
