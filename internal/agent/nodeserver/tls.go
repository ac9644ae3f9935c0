package nodeserver

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// RotatingTLSConfig is TLSConfig for a serving certificate that changes
// while the server runs (a joined node's, renewed through CSRs):
// getCertificate is asked at every handshake.
func RotatingTLSConfig(getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error), clientCAFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--client-ca-file %s: no PEM certificates", clientCAFile)
	}
	return &tls.Config{
		GetCertificate: getCertificate,
		ClientCAs:      pool,
		ClientAuth:     tls.VerifyClientCertIfGiven,
		MinVersion:     tls.VersionTLS12,
	}, nil
}
