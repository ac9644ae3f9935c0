package server

import (
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/auth/serviceaccount"
	"github.com/berth/berth/internal/pki"
)

// serviceAccountTokens issues tokens through serviceaccounts/token and
// authenticates them, with a signing key kept in DATA_DIR/pki so tokens
// outlive restarts.
type serviceAccountTokens struct {
	authn authenticator.Token
	api   *apiserver.ServiceAccountTokens
}

func newServiceAccountTokens(cfg Config, lb *inprocess.Loopback) (*serviceAccountTokens, error) {
	key, err := serviceaccount.LoadOrCreateKey(cfg.path("pki", "service-account.key"))
	if err != nil {
		return nil, err
	}
	issuer, err := serviceaccount.NewIssuer(key, serviceaccount.DefaultIssuer, time.Now)
	if err != nil {
		return nil, err
	}
	// The authenticator checks each token's service account and pod
	// through the API as the server's own identity.
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("service-account token authenticator: %w", err)
	}
	audiences := []string{serviceaccount.DefaultIssuer}
	return &serviceAccountTokens{
		authn: serviceaccount.NewAuthenticator(&key.PublicKey, serviceaccount.DefaultIssuer, audiences,
			serviceaccount.ClientObjects{Client: client}, time.Now, cfg.Logger.With("component", "serviceaccount-tokens")),
		api: &apiserver.ServiceAccountTokens{Issuer: issuer, Audiences: audiences},
	}, nil
}
