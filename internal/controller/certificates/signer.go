package certificates

import (
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/berth/berth/internal/pki"
)

// minLifetime is upstream's floor for spec.expirationSeconds.
const minLifetime = 10 * time.Minute

// sign issues the certificate for an approved kubelet client CSR. It checks
// the request again rather than trusting the approval: an administrator may
// have approved something that is not a node client certificate, and the
// signer alone decides what the client CA certifies.
func sign(ca *pki.CA, csr *certificatesv1.CertificateSigningRequest, lifetime time.Duration) ([]byte, error) {
	req, err := parseRequest(csr)
	if err != nil {
		return nil, err
	}
	name, err := checkNodeClient(req, csr.Spec.Usages)
	if err != nil {
		return nil, err
	}
	if s := csr.Spec.ExpirationSeconds; s != nil {
		if asked := max(time.Duration(*s)*time.Second, minLifetime); asked < lifetime {
			lifetime = asked
		}
	}
	certPEM, err := ca.SignPublicKey(pki.NodeIdentity(name), req.PublicKey, lifetime)
	if err != nil {
		return nil, fmt.Errorf("sign for node %s: %w", name, err)
	}
	return certPEM, nil
}
