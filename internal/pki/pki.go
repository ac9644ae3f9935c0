// Package pki keeps berth's certificate authorities and the identities they
// issue in one place: a CA per trust domain, one client certificate per
// component identity (CN=system:..., O=group), and kubeconfigs written from
// them. Everything is created on first start and reused afterwards.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/berth/berth/internal/atomicfile"
)

// Validity periods. Leaf certificates are renewed well before they expire by
// whoever holds them; CAs live long because rotating them is an operation.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	LeafValidity = 365 * 24 * time.Hour
)

// CA is a certificate authority with its key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM is the CA certificate as written to disk, for kubeconfigs and trust bundles.
	CertPEM []byte
}

// LoadOrCreateCA reads DIR/NAME.crt and DIR/NAME.key, creating a fresh
// self-signed CA there when neither exists.
func LoadOrCreateCA(dir, name string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	ca, err := loadCA(certPath, keyPath)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return ca, err
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: "berth-" + name + "@" + fmt.Sprint(now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA %s: %w", name, err)
	}
	if err := writeKeyPair(certPath, keyPath, der, key); err != nil {
		return nil, err
	}
	return loadCA(certPath, keyPath)
}

func loadCA(certPath, keyPath string) (*CA, error) {
	certs, key, certPEM, err := LoadKeyPair(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	if !certs[0].IsCA {
		return nil, fmt.Errorf("%s is not a CA certificate", certPath)
	}
	return &CA{Cert: certs[0], Key: key, CertPEM: certPEM}, nil
}

// Identity is what a leaf certificate asserts.
type Identity struct {
	CommonName    string
	Organizations []string
	DNSNames      []string
	IPs           []net.IP
	Client        bool // ExtKeyUsageClientAuth
	Server        bool // ExtKeyUsageServerAuth
}

// Issue signs a new key for id, valid for LeafValidity.
func (ca *CA) Issue(id Identity) (certPEM, keyPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := ca.sign(id, key.Public(), LeafValidity)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// SignPublicKey certifies an existing public key (the CSR flow) for validity.
func (ca *CA) SignPublicKey(id Identity, pub crypto.PublicKey, validity time.Duration) ([]byte, error) {
	der, err := ca.sign(id, pub, validity)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func (ca *CA) sign(id Identity, pub crypto.PublicKey, validity time.Duration) ([]byte, error) {
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: id.CommonName, Organization: id.Organizations},
		DNSNames:     id.DNSNames,
		IPAddresses:  id.IPs,
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	if id.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	if id.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for %q: %w", id.CommonName, err)
	}
	return der, nil
}

// PublicKeyHash is the pin an agent checks before trusting a server: the
// SHA-256 of the CA's SubjectPublicKeyInfo, as kubeadm's
// discovery-token-ca-cert-hash ("sha256:<hex>").
func PublicKeyHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// LoadKeyPair reads a PEM certificate chain and its private key.
func LoadKeyPair(certPath, keyPath string) ([]*x509.Certificate, crypto.Signer, []byte, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, nil, err
	}
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", certPath, err)
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	return certs, key, certPEM, nil
}

// ParseCertificates decodes every CERTIFICATE block in data.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

// ParseKey decodes a PKCS#8, EC or PKCS#1 private key.
func ParseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM private key found")
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	return signer, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return key, nil
}

// NewKeyPEM generates a fresh private key, PEM encoded (for CSRs).
func NewKeyPEM() (crypto.Signer, []byte, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := encodeKey(key)
	return key, keyPEM, err
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func newSerial() *big.Int {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand never fails on Linux; a zero serial would still be unique enough to notice.
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return serial
}

func writeKeyPair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyPEM, err := encodeKey(key)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}
