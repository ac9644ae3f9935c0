package serviceaccount

import (
	"crypto/ecdsa"
	"fmt"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	upstream "k8s.io/kubernetes/pkg/serviceaccount"
)

// NewAuthenticator is upstream's service-account token authenticator: it
// accepts tokens signed by key, from issuer, for one of audiences, whose
// ServiceAccount (and Pod, Secret or Node when bound to one) still exists
// as the same object. Tokens from another issuer are left to the other
// authenticators.
func NewAuthenticator(key *ecdsa.PublicKey, issuer string, audiences []string, objects upstream.ServiceAccountTokenGetter) (authenticator.Token, error) {
	keys, err := publicKeys(key)
	if err != nil {
		return nil, err
	}
	return upstream.JWTTokenAuthenticator([]string{issuer}, keys, authenticator.Audiences(audiences), upstream.NewValidator(objects)), nil
}

// NewOpenIDMetadata is upstream's OIDC discovery document and key set for
// issuer, with key as the one signing key and the key set served at
// https://externalAddress/openid/v1/jwks, as kube-apiserver's default.
func NewOpenIDMetadata(key *ecdsa.PublicKey, issuer, externalAddress string) (upstream.OpenIDMetadataProvider, error) {
	keys, err := publicKeys(key)
	if err != nil {
		return nil, err
	}
	provider, err := upstream.NewOpenIDMetadataProvider(issuer, "", externalAddress, keys)
	if err != nil {
		return nil, fmt.Errorf("service-account issuer discovery: %w", err)
	}
	return provider, nil
}

func publicKeys(key *ecdsa.PublicKey) (upstream.PublicKeysGetter, error) {
	keys, err := upstream.StaticPublicKeysGetter([]any{key})
	if err != nil {
		return nil, fmt.Errorf("service-account public key: %w", err)
	}
	return keys, nil
}
