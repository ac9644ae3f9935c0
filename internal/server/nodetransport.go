package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"time"

	"github.com/berth/berth/internal/pki"
)

// nodeTransport is how the API server calls node agents (pods/log, exec,
// attach, portforward): as system:apiserver, with a client certificate
// from the client CA issued at start-up, trusting only node serving
// certificates from the node serving CA. A transport follows no redirect
// itself; the pods/log and upgrade handlers (internal/apiserver
// pod_connect.go) refuse the ones a node answers with.
func nodeTransport(cluster *pki.Cluster) (*http.Transport, error) {
	certPEM, keyPEM, err := cluster.ClientCA.Issue(pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("API server client certificate for nodes: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("API server client certificate for nodes: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cluster.NodeServingCA.Cert)
	return &http.Transport{
		Proxy:               nil, // nodes are reached directly, never through HTTP_PROXY
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, RootCAs: roots},
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 10,
	}, nil
}
