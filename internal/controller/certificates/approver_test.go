package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth/berth/internal/pki"
)

type nodeMap map[string]*corev1.Node

func (m nodeMap) Get(name string) (*corev1.Node, error) {
	if n, ok := m[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
}

func (m nodeMap) List(labels.Selector) ([]*corev1.Node, error) {
	return slices.Collect(maps.Values(m)), nil
}

func node(name string, ready corev1.ConditionStatus) *corev1.Node {
	n := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	n.Name = name
	return n
}

func csrFor(t *testing.T, subject pkix.Name, dns []string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dns}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestDecide(t *testing.T) {
	nodeA := pkix.Name{CommonName: "system:node:node-a", Organization: []string{"system:nodes"}}
	clientUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	bootstrapper := []string{"system:bootstrappers", "system:authenticated"}
	nodeGroups := []string{"system:nodes", "system:authenticated"}
	nodes := nodeMap{"ready": node("ready", corev1.ConditionTrue), "notready": node("notready", corev1.ConditionUnknown)}
	subject := func(n string) pkix.Name {
		return pkix.Name{CommonName: "system:node:" + n, Organization: []string{"system:nodes"}}
	}
	cases := []struct {
		name      string
		signer    string
		request   []byte
		usages    []certificatesv1.KeyUsage
		user      string
		groups    []string
		want      verdict
		wantInMsg string
	}{
		{"bootstrapper joins a new node", "", csrFor(t, nodeA, nil), clientUsages, "system:bootstrap:abcdef", bootstrapper, approve, "joins as node node-a"},
		{"RSA-style usages too", "", csrFor(t, nodeA, nil), append(clientUsages, certificatesv1.UsageKeyEncipherment), "system:bootstrap:abcdef", bootstrapper, approve, ""},
		{"bootstrapper rejoins a NotReady node", "", csrFor(t, subject("notready"), nil), clientUsages, "system:bootstrap:abcdef", bootstrapper, approve, ""},
		{"bootstrapper takes over a Ready node", "", csrFor(t, subject("ready"), nil), clientUsages, "system:bootstrap:abcdef", bootstrapper, deny, "already exists and is Ready"},
		{"node renews itself", "", csrFor(t, nodeA, nil), clientUsages, "system:node:node-a", nodeGroups, approve, "renews"},
		{"node asks for another node", "", csrFor(t, subject("node-b"), nil), clientUsages, "system:node:node-a", nodeGroups, deny, "may not request"},
		{"CN not a node", "", csrFor(t, pkix.Name{CommonName: "admin", Organization: []string{"system:nodes"}}, nil), clientUsages, "system:bootstrap:abcdef", bootstrapper, deny, "common name"},
		{"empty node name", "", csrFor(t, subject(""), nil), clientUsages, "system:bootstrap:abcdef", bootstrapper, deny, "common name"},
		{"masters org smuggled in", "", csrFor(t, pkix.Name{CommonName: "system:node:node-a", Organization: []string{"system:nodes", "system:masters"}}, nil), clientUsages, "system:bootstrap:abcdef", bootstrapper, deny, "organization"},
		{"SANs", "", csrFor(t, nodeA, []string{"node-a"}), clientUsages, "system:bootstrap:abcdef", bootstrapper, deny, "subject alternative"},
		{"server auth usage", "", csrFor(t, nodeA, nil), append(clientUsages, certificatesv1.UsageServerAuth), "system:bootstrap:abcdef", bootstrapper, deny, "not allowed"},
		{"no client auth", "", csrFor(t, nodeA, nil), []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}, "system:bootstrap:abcdef", bootstrapper, deny, "client auth"},
		{"garbage request", "", []byte("not pem"), clientUsages, "system:bootstrap:abcdef", bootstrapper, deny, "PEM"},
		{"ordinary user: left to an admin", "", csrFor(t, nodeA, nil), clientUsages, "alice", []string{"system:authenticated"}, undecided, ""},
		{"other signer: not ours", "example.com/signer", csrFor(t, nodeA, nil), clientUsages, "system:bootstrap:abcdef", bootstrapper, undecided, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
				SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
				Request:    tc.request, Usages: tc.usages, Username: tc.user, Groups: tc.groups,
			}}
			if tc.signer != "" {
				csr.Spec.SignerName = tc.signer
			}
			got, msg, err := decide(csr, nodes, newAddressClaims())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || !strings.Contains(msg, tc.wantInMsg) {
				t.Errorf("decide = %v %q, want %v containing %q", got, msg, tc.want, tc.wantInMsg)
			}
		})
	}
}

func TestSignIssuesNodeClientCertificate(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "client-ca")
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		Request:    csrFor(t, pkix.Name{CommonName: "system:node:node-a", Organization: []string{"system:nodes"}}, nil),
		Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	}}
	s := signer{client: ca, lifetime: time.Hour}
	certPEM, err := s.sign(csr)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := pki.ParseCertificates(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	c := certs[0]
	if c.Subject.CommonName != "system:node:node-a" || len(c.Subject.Organization) != 1 || c.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject = %v", c.Subject)
	}
	if err := c.CheckSignatureFrom(ca.Cert); err != nil {
		t.Errorf("not signed by the client CA: %v", err)
	}
	if life := c.NotAfter.Sub(c.NotBefore); life > 2*time.Hour {
		t.Errorf("lifetime %s exceeds the configured hour (plus backdating)", life)
	}
	if len(c.ExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Errorf("ext key usage = %v, want client auth only", c.ExtKeyUsage)
	}

	csr.Spec.Request = csrFor(t, pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, nil)
	if _, err := s.sign(csr); err == nil {
		t.Error("signer certified an approved request that is not a node client certificate")
	}
}
