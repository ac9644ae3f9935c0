// Package jwks verifies a token as a relying party does: with the key of
// its "kid" from a published JSON Web Key Set.
package jwks

import (
	"fmt"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Verify checks token's signature with the one key of keys its header
// names and returns its registered claims.
func Verify(keys jose.JSONWebKeySet, token string) (jwt.Claims, error) {
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256, jose.RS256})
	if err != nil {
		return jwt.Claims{}, fmt.Errorf("parse token: %w", err)
	}
	kid := parsed.Headers[0].KeyID
	found := keys.Key(kid)
	if len(found) != 1 {
		return jwt.Claims{}, fmt.Errorf("the key set has %d keys with the token's kid %q, want 1", len(found), kid)
	}
	var claims jwt.Claims
	if err := parsed.Claims(found[0].Key, &claims); err != nil {
		return jwt.Claims{}, fmt.Errorf("the published key does not verify the token: %w", err)
	}
	return claims, nil
}
