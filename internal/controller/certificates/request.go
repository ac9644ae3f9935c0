// Package certificates is berth's CSR controller for node certificates: an
// approver that decides kubernetes.io/kube-apiserver-client-kubelet requests
// from joining nodes (bootstrap tokens) and from nodes renewing their own
// client certificate, and kubernetes.io/kubelet-serving requests from nodes
// for their node server (serving.go); and a signer that issues approved ones,
// client certificates from the cluster's client CA and serving certificates
// from the CA the API server trusts for node servers. The rules follow
// upstream's csrapproving and csrsigning controllers (k8s.io/kubernetes, not
// importable as a library), so the upstream kubelet's TLS bootstrap and
// --rotate-server-certificates work unchanged.
package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// Node identity, as the kubelet requests it and the Node authorizer reads it.
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
	bootstrappers  = "system:bootstrappers"
)

// parseRequest decodes and checks the signature of a CSR's PEM request.
func parseRequest(csr *certificatesv1.CertificateSigningRequest) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("spec.request is not a PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse spec.request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("spec.request signature: %w", err)
	}
	return req, nil
}

// allowedUsages are what a node client certificate may carry (upstream's
// kubelet asks for key encipherment only with RSA keys).
var allowedUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth,
}

// checkNodeClient returns the node name a request is for, or why it is not a
// valid node client certificate request: CN=system:node:NAME, O=system:nodes
// exactly, no subject alternative names, client auth among only allowed usages.
func checkNodeClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (string, error) {
	name, err := nodeSubjectName(req)
	switch {
	case err != nil:
		return "", err
	case len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0:
		return "", errors.New("a node client certificate carries no subject alternative names")
	case !slices.Contains(usages, certificatesv1.UsageClientAuth):
		return "", errors.New("usages lack client auth")
	}
	for _, u := range usages {
		if !slices.Contains(allowedUsages, u) {
			return "", fmt.Errorf("usage %q is not allowed for a node client certificate", u)
		}
	}
	return name, nil
}

// nodeSubjectName returns NAME from a request whose subject is exactly a
// node's identity (CN=system:node:NAME, O=system:nodes), or why it is not.
func nodeSubjectName(req *x509.CertificateRequest) (string, error) {
	name, ok := strings.CutPrefix(req.Subject.CommonName, nodeUserPrefix)
	switch {
	case !ok || name == "":
		return "", fmt.Errorf("common name %q is not system:node:<name>", req.Subject.CommonName)
	case !slices.Equal(req.Subject.Organization, []string{nodesGroup}):
		return "", fmt.Errorf("organization %q is not exactly [%s]", req.Subject.Organization, nodesGroup)
	}
	return name, nil
}

// decided reports whether a CSR is already approved, denied or failed.
func decided(csr *certificatesv1.CertificateSigningRequest) (approved, final bool) {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved, final = true, true
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false, true
		}
	}
	return approved, final
}
