package join

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/certificate"
)

// servingPrefix names the node server's pair: DIR/pki/node-server-current.pem (0600).
const servingPrefix = "node-server"

// servingUsages are what the kubelet asks for its serving certificate.
var servingUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth,
}

// Serving is a joined node's serving certificate for its node server, the
// kubelet's --rotate-server-certificates: the node asks for it with its own
// client identity (signer kubernetes.io/kubelet-serving, CN=system:node:NAME,
// O=system:nodes), for its name and the addresses it reports in its Node,
// keeps it in DIR/pki, and renews it before it expires and whenever its
// addresses change. The node server presents whatever is current at each
// handshake (GetCertificate).
type Serving struct {
	nodeName string
	mgr      certificate.Manager
	log      *slog.Logger

	mu    sync.Mutex
	addrs []corev1.NodeAddress // what the Node reports; nil until SetAddresses
}

// NewServing loads the stored serving certificate, if any, and prepares its
// rotation, which stops when ctx ends; nothing is requested before Start and
// SetAddresses.
func NewServing(ctx context.Context, dir, nodeName string, log *slog.Logger) (*Serving, error) {
	s := &Serving{nodeName: nodeName, log: log}
	mgr, err := rotation{
		name:     servingPrefix,
		signer:   certificatesv1.KubeletServingSignerName,
		usages:   servingUsages,
		template: s.template,
	}.manager(&ctx, dir)
	if err != nil {
		return nil, err
	}
	s.mgr = mgr
	return s, nil
}

// SetAddresses gives the addresses the node reports in its Node's status:
// the certificate covers them (and the node's name). A change leads to a new
// request.
func (s *Serving) SetAddresses(addrs []corev1.NodeAddress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addrs = slices.Clone(addrs)
}

// template is the request for the current addresses: DNS names for the
// node's name and its host names, IPs for its addresses; nil before the
// addresses are known, so the first certificate already covers them.
func (s *Serving) template() *x509.CertificateRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addrs == nil {
		return nil
	}
	t := &x509.CertificateRequest{Subject: *nodeSubject(s.nodeName), DNSNames: []string{s.nodeName}}
	for _, a := range s.addrs {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			if !slices.Contains(t.DNSNames, a.Address) {
				t.DNSNames = append(t.DNSNames, a.Address)
			}
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			ip := net.ParseIP(a.Address)
			if ip != nil && !slices.ContainsFunc(t.IPAddresses, ip.Equal) {
				t.IPAddresses = append(t.IPAddresses, ip)
			}
		}
	}
	return t
}

// errNoServingCertificate: the node server is up before the certificate is
// signed; handshakes fail until it is.
var errNoServingCertificate = errors.New("no serving certificate yet: the node's kubelet-serving CSR is not signed")

// GetCertificate is tls.Config's: the current certificate, following rotation.
func (s *Serving) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.mgr.Current(); c != nil {
		return c, nil
	}
	return nil, errNoServingCertificate
}

// Start requests the certificate when there is none, and renews it, in the
// background until the context given to NewServing ends.
func (s *Serving) Start() {
	if c := s.mgr.Current(); c != nil && c.Leaf != nil {
		s.log.Info("node serving certificate loaded; renewed at 70-90% of its lifetime", "expires", c.Leaf.NotAfter)
	} else {
		s.log.Info("requesting a node serving certificate (kubelet-serving CSR)")
	}
	s.mgr.Start()
}
