package join

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/berth/berth/internal/pki"
)

// DiscoverCA learns the server's CA from the TLS handshake without trusting
// anything the server says until it is checked: among the certificates the
// server presents, the CA whose SubjectPublicKeyInfo hashes to pin is taken,
// and the serving certificate must chain to it for the URL's host. A server
// that cannot show a CA with the pinned key is refused before any request
// (and so before the token) is sent.
func DiscoverCA(ctx context.Context, serverURL, pin string) ([]byte, error) {
	u, err := url.Parse(serverURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want https://HOST:PORT", serverURL)
	}
	host, addr := u.Hostname(), u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(host, "443")
	}
	var ca *x509.Certificate
	dialer := tls.Dialer{Config: &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: host,
		// Verification happens in VerifyConnection against the pinned CA,
		// not against the system roots, which know nothing of this cluster.
		InsecureSkipVerify: true, //nolint:gosec // replaced by the pin check below
		VerifyConnection: func(cs tls.ConnectionState) error {
			var err error
			ca, err = verifyPinned(cs.PeerCertificates, host, pin)
			return err
		},
	}}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("discover the server's CA at %s: %w", addr, err)
	}
	conn.Close()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), nil
}

// ErrPinMismatch: the server showed no CA with the pinned public key.
var ErrPinMismatch = errors.New("the server's CA does not match the join token's CA hash")

func verifyPinned(chain []*x509.Certificate, host, pin string) (*x509.Certificate, error) {
	if len(chain) == 0 {
		return nil, errors.New("the server presented no certificate")
	}
	var ca *x509.Certificate
	var seen []string
	for _, c := range chain[1:] {
		if !c.IsCA {
			continue
		}
		h := pki.PublicKeyHash(c)
		if h == pin {
			ca = c
			break
		}
		seen = append(seen, h)
	}
	if ca == nil {
		return nil, fmt.Errorf("%w: want %s, the server presented %v (wrong token, or someone is in the middle)", ErrPinMismatch, pin, seen)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, fmt.Errorf("the server's certificate does not verify against the pinned CA: %w", err)
	}
	return ca, nil
}
