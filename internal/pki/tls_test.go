package pki

import (
	"crypto/tls"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

func restTLS(cfg *rest.Config) (*tls.Config, error) {
	tc, err := cfg.TransportConfig()
	if err != nil {
		return nil, err
	}
	return transport.TLSConfigFor(tc)
}
