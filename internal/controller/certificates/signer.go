package certificates

import (
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/berth/berth/internal/pki"
)

// minLifetime is upstream's floor for spec.expirationSeconds.
const minLifetime = 10 * time.Minute

// signer issues approved node certificates, each kind from its own CA.
type signer struct {
	client   *pki.CA // node client certificates: the CA the API server authenticates clients with
	serving  *pki.CA // node serving certificates: the CA the API server verifies node servers with
	lifetime time.Duration
}

// sign issues the certificate for an approved CSR. It checks the request
// again rather than trusting the approval: an administrator may have
// approved something that is not a node certificate, and the signer alone
// decides what its CAs certify.
func (s signer) sign(csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	req, err := parseRequest(csr)
	if err != nil {
		return nil, err
	}
	var (
		ca *pki.CA
		id pki.Identity
	)
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		name, err := checkNodeClient(req, csr.Spec.Usages)
		if err != nil {
			return nil, err
		}
		ca, id = s.client, pki.NodeIdentity(name)
	case certificatesv1.KubeletServingSignerName:
		name, err := checkNodeServing(req, csr.Spec.Usages)
		if err != nil {
			return nil, err
		}
		ca = s.serving
		id = pki.Identity{CommonName: nodeUserPrefix + name, Organizations: []string{nodesGroup},
			DNSNames: req.DNSNames, IPs: req.IPAddresses, Server: true}
	default:
		return nil, fmt.Errorf("signer %q is not one of berth's", csr.Spec.SignerName)
	}
	if ca == nil {
		return nil, errors.New("no CA configured for signer " + csr.Spec.SignerName)
	}
	certPEM, err := ca.SignPublicKey(id, req.PublicKey, s.lifetimeFor(csr))
	if err != nil {
		return nil, fmt.Errorf("sign for %s: %w", id.CommonName, err)
	}
	return certPEM, nil
}

// lifetimeFor is the configured lifetime, shortened to spec.expirationSeconds
// (no shorter than minLifetime) when the requester asks for less.
func (s signer) lifetimeFor(csr *certificatesv1.CertificateSigningRequest) time.Duration {
	lifetime := s.lifetime
	if secs := csr.Spec.ExpirationSeconds; secs != nil {
		if asked := max(time.Duration(*secs)*time.Second, minLifetime); asked < lifetime {
			lifetime = asked
		}
	}
	return lifetime
}
