package certificates

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
)

// Node serving certificates (signer kubernetes.io/kubelet-serving) are what
// a node server presents to the API server when it proxies logs, exec,
// attach and port-forward.
//
// Upstream's kube-controller-manager never approves them by itself: the
// SANs a node asks for come from the addresses it reports about itself, so
// an automatic approval is only as honest as the node. berth approves them
// anyway, because without one a token-joined node cannot serve logs or exec
// at all, and it narrows what a node can obtain to what it could already
// claim without the certificate:
//   - only the node itself asks (system:node:N in system:nodes, CN
//     system:node:N), never a join token;
//   - every DNS SAN is the node's name or a host name its Node reports, every
//     IP SAN an address its Node reports;
//   - no IP any other Node has ever reported, and no other Node's name, for
//     as long as the controller runs (addressClaims): the API server dials
//     nodes by address, and a certificate for another node's address would
//     let a node answer in its place, even after that node left or moved;
//   - no wildcard DNS names, and none of the API server's in-cluster names.
//
// A host name several Nodes report (agents sharing one machine's host name)
// is allowed to each: the API server dials a node by host name only when it
// reports no IP at all.
//
// They are signed by a CA of their own, which only the API server trusts
// (pki.Cluster.NodeServingCA), so no node certificate ever passes for the
// API server's, whatever names a node manages to report.

// servingUsages are what a node serving certificate may carry: server auth,
// with key encipherment only for RSA keys, as the kubelet asks.
var servingUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth,
}

// apiServerNames are the API server's in-cluster names, which no node may
// hold whatever it reports.
var apiServerNames = []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc"}

func isAPIServerName(dns string) bool {
	return slices.Contains(apiServerNames, dns) || strings.HasPrefix(dns, "kubernetes.default.svc.")
}

// checkNodeServing returns the node name a request is for, or why it is not
// a valid node serving certificate request: CN=system:node:NAME,
// O=system:nodes exactly, at least one DNS or IP SAN and no other kind,
// server auth among only allowed usages, none of the API server's names and
// no unspecified address.
func checkNodeServing(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (string, error) {
	name, err := nodeSubjectName(req)
	switch {
	case err != nil:
		return "", err
	case len(req.EmailAddresses)+len(req.URIs) > 0:
		return "", errors.New("a node serving certificate carries no email or URI subject alternative names")
	case len(req.DNSNames)+len(req.IPAddresses) == 0:
		return "", errors.New("a node serving certificate needs at least one DNS or IP subject alternative name")
	case !slices.Contains(usages, certificatesv1.UsageServerAuth):
		return "", errors.New("usages lack server auth")
	}
	for _, u := range usages {
		if !slices.Contains(servingUsages, u) {
			return "", fmt.Errorf("usage %q is not allowed for a node serving certificate", u)
		}
	}
	if i := slices.IndexFunc(req.DNSNames, func(d string) bool { return strings.Contains(d, "*") }); i >= 0 {
		return "", fmt.Errorf("%q is a wildcard DNS name", req.DNSNames[i])
	}
	if i := slices.IndexFunc(req.DNSNames, isAPIServerName); i >= 0 {
		return "", fmt.Errorf("%q is a name of the API server", req.DNSNames[i])
	}
	if i := slices.IndexFunc(req.IPAddresses, net.IP.IsUnspecified); i >= 0 {
		return "", fmt.Errorf("%s is the unspecified address", req.IPAddresses[i])
	}
	return name, nil
}

// decideServing applies the approval policy above to a kubelet-serving CSR.
func decideServing(csr *certificatesv1.CertificateSigningRequest, nodes NodeGetter, claims *addressClaims) (verdict, string, error) {
	req, err := parseRequest(csr)
	if err != nil {
		return deny, err.Error(), nil
	}
	name, err := checkNodeServing(req, csr.Spec.Usages)
	if err != nil {
		return deny, err.Error(), nil
	}
	requester := csr.Spec.Username
	switch {
	case requester == nodeUserPrefix+name && slices.Contains(csr.Spec.Groups, nodesGroup):
	case slices.Contains(csr.Spec.Groups, nodesGroup):
		return deny, fmt.Sprintf("%s may not request a serving certificate for node %s", requester, name), nil
	case slices.Contains(csr.Spec.Groups, bootstrappers):
		return deny, "a join token may not request a serving certificate: the node asks with its own identity once joined", nil
	default:
		return undecided, "", nil
	}
	node, err := nodes.Get(name)
	if apierrors.IsNotFound(err) {
		// The agent registers before it asks; the informer may lag. Retry.
		return undecided, "", fmt.Errorf("node %s is not registered (yet)", name)
	}
	if err != nil {
		return undecided, "", fmt.Errorf("read node %s: %w", name, err)
	}
	if len(node.Status.Addresses) == 0 {
		// Registered, its status not yet written: judge the SANs once it is.
		return undecided, "", fmt.Errorf("node %s reports no addresses (yet)", name)
	}
	// The Nodes listed now count too, whether or not the informer's
	// handler has recorded them yet.
	others, err := nodes.List(labels.Everything())
	if err != nil {
		return undecided, "", fmt.Errorf("list nodes: %w", err)
	}
	for _, o := range others {
		claims.record(o)
	}
	if why := foreignSAN(req, node, claims); why != "" {
		return deny, why, nil
	}
	return approve, fmt.Sprintf("node %s's serving certificate for its own name and reported addresses", name), nil
}

// foreignSAN returns why one of the request's SANs does not belong to node,
// or "" when all do.
func foreignSAN(req *x509.CertificateRequest, node *corev1.Node, claims *addressClaims) string {
	for _, d := range req.DNSNames {
		if claims.isOtherNodeName(d, node.Name) {
			return fmt.Sprintf("DNS name %q is the name of another Node", d)
		}
		if d != node.Name && !hasAddress(node, d, corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS) {
			return fmt.Sprintf("DNS name %q is neither node %s's name nor a host name in its status.addresses", d, node.Name)
		}
	}
	for _, ip := range req.IPAddresses {
		if !hasAddress(node, ip.String(), corev1.NodeInternalIP, corev1.NodeExternalIP) {
			return fmt.Sprintf("IP %s is not among node %s's status.addresses", ip, node.Name)
		}
		if other, ok := claims.otherNodeWithIP(ip, node.Name); ok {
			return fmt.Sprintf("IP %s is also reported, now or before, by node %s", ip, other)
		}
	}
	return ""
}

// hasAddress reports whether node lists addr (compared as an IP when it is
// one) with one of the given types.
func hasAddress(node *corev1.Node, addr string, types ...corev1.NodeAddressType) bool {
	want := net.ParseIP(addr)
	return slices.ContainsFunc(node.Status.Addresses, func(a corev1.NodeAddress) bool {
		if !slices.Contains(types, a.Type) {
			return false
		}
		if want != nil {
			return want.Equal(net.ParseIP(a.Address))
		}
		return a.Address == addr
	})
}
