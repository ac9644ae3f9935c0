// Package serviceaccount issues and verifies service-account tokens: JWTs
// signed with a key in the server's PKI directory, bound to a
// ServiceAccount and optionally a Pod (by name and UID), with audiences and
// an expiry, in the claim format kube-apiserver uses (so client libraries
// that read them keep working). go-jose does the JOSE work; k8s.io/apiserver
// has a verifier's building blocks but no issuer.
package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/berth/berth/internal/atomicfile"
)

// LoadOrCreateKey reads the signing key at path (PKCS#8 PEM), creating a new
// P-256 key (0600) when there is none, so tokens survive restarts.
func LoadOrCreateKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("service-account signing key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("service-account signing key %s: no PKCS#8 PEM block", path)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("service-account signing key %s: %w", path, err)
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("service-account signing key %s: a %T, want ECDSA", path, parsed)
	}
	return key, nil
}

func createKey(path string) (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the service-account signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the service-account signing key: %w", err)
	}
	if err := atomicfile.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("writing the service-account signing key: %w", err)
	}
	return key, nil
}

// keyID names a public key in tokens' "kid" header, as upstream does: the
// unpadded base64url SHA-256 of its DER encoding.
func keyID(pub *ecdsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encoding the service-account public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
