// Package serviceaccount issues and verifies service-account tokens with
// upstream's generator, claims, authenticator and OIDC discovery
// (k8s.io/kubernetes/pkg/serviceaccount), signed with a key kept in the
// server's PKI directory. berth owns the key's storage and the reads of
// the objects tokens are bound to.
package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
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
