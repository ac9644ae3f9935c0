package serviceaccount

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	corev1 "k8s.io/api/core/v1"

	"github.com/berth/berth/internal/testkit/jwks"
)

// A relying party finds the issuer's key set through the discovery
// document and verifies the server's tokens with it.
func TestOpenIDMetadataVerifiesIssuedTokens(t *testing.T) {
	key, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	metadata, err := NewOpenIDMetadata(&key.PublicKey, DefaultIssuer, "192.0.2.10:6443")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	configJSON, _ := metadata.GetConfigJSON()
	if err := json.Unmarshal(configJSON, &doc); err != nil {
		t.Fatalf("discovery document %s: %v", configJSON, err)
	}
	if doc.Issuer != DefaultIssuer || doc.JWKSURI != "https://192.0.2.10:6443/openid/v1/jwks" || len(doc.Algs) != 1 || doc.Algs[0] != "ES256" {
		t.Errorf("discovery document %+v", doc)
	}
	var keys jose.JSONWebKeySet
	keysJSON, _ := metadata.GetKeysetJSON()
	if err := json.Unmarshal(keysJSON, &keys); err != nil {
		t.Fatalf("key set %s: %v", keysJSON, err)
	}

	issuer, err := NewIssuer(key, DefaultIssuer)
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: meta("team", "robot", "sa-1")}
	token, _, err := issuer.Issue(context.Background(), sa, nil, nil, []string{"vault"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := jwks.Verify(keys, token)
	if err != nil {
		t.Fatal(err)
	}
	if claims.Issuer != DefaultIssuer || claims.Subject != "system:serviceaccount:team:robot" {
		t.Errorf("claims %+v", claims)
	}
}
