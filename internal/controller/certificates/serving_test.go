package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/berth/berth/internal/pki"
)

// sans is what a serving request asks for.
type sans struct {
	dns    []string
	ips    []string
	emails []string
}

func servingCSR(t *testing.T, subject pkix.Name, s sans) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: subject, DNSNames: s.dns, EmailAddresses: s.emails}
	for _, ip := range s.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func nodeWithAddresses(name string, addrs ...corev1.NodeAddress) *corev1.Node {
	n := node(name, corev1.ConditionTrue)
	n.Status.Addresses = addrs
	return n
}

func nodeSubjectFor(name string) pkix.Name {
	return pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}}
}

func TestDecideServing(t *testing.T) {
	nodes := nodeMap{
		"node-a": nodeWithAddresses("node-a",
			corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.10"},
			corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "198.51.100.10"},
			corev1.NodeAddress{Type: corev1.NodeHostName, Address: "host-a"},
			// Shared with node-b: whoever reports it, neither gets it.
			corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.99"},
			// Once node-gone's, which the controller saw and which is deleted now.
			corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.50"},
			// Other Nodes' names, which node-a reports as its own host names.
			corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-b"},
			corev1.NodeAddress{Type: corev1.NodeInternalDNS, Address: "Node-Gone"},
			corev1.NodeAddress{Type: corev1.NodeExternalDNS, Address: "*.example.com"}),
		"node-b": nodeWithAddresses("node-b",
			corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.11"},
			corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.99"},
			corev1.NodeAddress{Type: corev1.NodeHostName, Address: "host-b"}),
		// node-c reports the unspecified address and an API server name.
		"node-c": nodeWithAddresses("node-c", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "0.0.0.0"},
			corev1.NodeAddress{Type: corev1.NodeHostName, Address: "kubernetes.default"}),
	}
	serverUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	nodeA, nodeAGroups := "system:node:node-a", []string{"system:nodes", "system:authenticated"}
	own := sans{dns: []string{"node-a", "host-a"}, ips: []string{"192.0.2.10"}}
	cases := []struct {
		name      string
		subject   pkix.Name
		sans      sans
		usages    []certificatesv1.KeyUsage
		user      string
		groups    []string
		want      verdict
		wantInMsg string
	}{
		{"own name, host name and InternalIP", nodeSubjectFor("node-a"), own, serverUsages, nodeA, nodeAGroups, approve, "node node-a's serving certificate"},
		{"ExternalIP and name only", nodeSubjectFor("node-a"), sans{dns: []string{"node-a"}, ips: []string{"198.51.100.10"}}, serverUsages, nodeA, nodeAGroups, approve, ""},
		{"ECDSA usages without key encipherment", nodeSubjectFor("node-a"), own, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, nodeA, nodeAGroups, approve, ""},
		{"foreign DNS name", nodeSubjectFor("node-a"), sans{dns: []string{"node-a", "mail.example.com"}}, serverUsages, nodeA, nodeAGroups, deny, `"mail.example.com" is neither`},
		{"another node's name as DNS name", nodeSubjectFor("node-a"), sans{dns: []string{"node-c"}}, serverUsages, nodeA, nodeAGroups, deny, `"node-c" is the name of another Node`},
		{"another node's host name", nodeSubjectFor("node-a"), sans{dns: []string{"host-b"}}, serverUsages, nodeA, nodeAGroups, deny, "is neither"},
		{"another node's IP", nodeSubjectFor("node-a"), sans{ips: []string{"192.0.2.11"}}, serverUsages, nodeA, nodeAGroups, deny, "192.0.2.11 is not among node node-a's"},
		{"an IP two nodes report", nodeSubjectFor("node-a"), sans{ips: []string{"192.0.2.99"}}, serverUsages, nodeA, nodeAGroups, deny, "also reported, now or before, by node node-b"},
		{"an IP a deleted node reported", nodeSubjectFor("node-a"), sans{dns: []string{"node-a"}, ips: []string{"192.0.2.10", "192.0.2.50"}}, serverUsages, nodeA, nodeAGroups, deny, "192.0.2.50 is also reported, now or before, by node node-gone"},
		{"another node's name it reports as a host name", nodeSubjectFor("node-a"), sans{dns: []string{"node-a", "node-b"}}, serverUsages, nodeA, nodeAGroups, deny, `"node-b" is the name of another Node`},
		{"a deleted node's name it reports as a host name", nodeSubjectFor("node-a"), sans{dns: []string{"node-gone"}}, serverUsages, nodeA, nodeAGroups, deny, `"node-gone" is the name of another Node`},
		{"a wildcard it reports", nodeSubjectFor("node-a"), sans{dns: []string{"node-a", "*.example.com"}}, serverUsages, nodeA, nodeAGroups, deny, "wildcard"},
		{"the unspecified address, though the node reports it", nodeSubjectFor("node-c"), sans{ips: []string{"0.0.0.0"}}, serverUsages, "system:node:node-c", nodeAGroups, deny, "unspecified"},
		{"an API server name, though the node reports it", nodeSubjectFor("node-c"), sans{dns: []string{"kubernetes.default"}}, serverUsages, "system:node:node-c", nodeAGroups, deny, "name of the API server"},
		{"the API server's cluster-domain name", nodeSubjectFor("node-a"), sans{dns: []string{"node-a", "kubernetes.default.svc.cluster.local"}}, serverUsages, nodeA, nodeAGroups, deny, "name of the API server"},
		{"loopback the node does not report", nodeSubjectFor("node-a"), sans{dns: []string{"node-a"}, ips: []string{"127.0.0.1"}}, serverUsages, nodeA, nodeAGroups, deny, "127.0.0.1 is not among"},
		{"node asks for another node's certificate", nodeSubjectFor("node-b"), sans{dns: []string{"node-b"}}, serverUsages, nodeA, nodeAGroups, deny, "may not request a serving certificate for node node-b"},
		{"bootstrapper", nodeSubjectFor("node-a"), own, serverUsages, "system:bootstrap:abcdef", []string{"system:bootstrappers", "system:authenticated"}, deny, "join token may not"},
		{"client auth usage", nodeSubjectFor("node-a"), own, append(slices.Clone(serverUsages), certificatesv1.UsageClientAuth), nodeA, nodeAGroups, deny, `"client auth" is not allowed`},
		{"no server auth", nodeSubjectFor("node-a"), own, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}, nodeA, nodeAGroups, deny, "lack server auth"},
		{"no SANs", nodeSubjectFor("node-a"), sans{}, serverUsages, nodeA, nodeAGroups, deny, "at least one"},
		{"email SAN", nodeSubjectFor("node-a"), sans{dns: []string{"node-a"}, emails: []string{"a@example.com"}}, serverUsages, nodeA, nodeAGroups, deny, "email"},
		{"masters org smuggled in", pkix.Name{CommonName: "system:node:node-a", Organization: []string{"system:nodes", "system:masters"}}, own, serverUsages, nodeA, nodeAGroups, deny, "organization"},
		{"CN not a node", pkix.Name{CommonName: "system:apiserver", Organization: []string{"system:nodes"}}, own, serverUsages, nodeA, nodeAGroups, deny, "common name"},
		{"ordinary user: left to an admin", nodeSubjectFor("node-a"), own, serverUsages, "alice", []string{"system:authenticated"}, undecided, ""},
	}
	// What the node informer told the controller before node-gone was deleted.
	claims := newAddressClaims()
	claims.record(nodeWithAddresses("node-gone", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.50"}))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
				SignerName: certificatesv1.KubeletServingSignerName,
				Request:    servingCSR(t, tc.subject, tc.sans), Usages: tc.usages, Username: tc.user, Groups: tc.groups,
			}}
			got, msg, err := decide(csr, nodes, claims)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || !strings.Contains(msg, tc.wantInMsg) {
				t.Errorf("decide = %v %q, want %v containing %q", got, msg, tc.want, tc.wantInMsg)
			}
		})
	}
}

// A node whose Node the controller has not seen yet, or whose Node reports
// no addresses yet, is retried, not denied: the agent asks while it
// registers.
func TestDecideServingRetriesUnknownNode(t *testing.T) {
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		SignerName: certificatesv1.KubeletServingSignerName,
		Request:    servingCSR(t, nodeSubjectFor("node-new"), sans{dns: []string{"node-new"}}),
		Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		Username:   "system:node:node-new", Groups: []string{"system:nodes"},
	}}
	got, _, err := decide(csr, nodeMap{}, newAddressClaims())
	if got != undecided || err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Errorf("decide = %v, %v; want undecided with a retryable error", got, err)
	}
	// Registered, but its status (the addresses) not yet written.
	got, _, err = decide(csr, nodeMap{"node-new": nodeWithAddresses("node-new")}, newAddressClaims())
	if got != undecided || err == nil || !strings.Contains(err.Error(), "no addresses") {
		t.Errorf("decide = %v, %v; want undecided with a retryable error", got, err)
	}
}

// An address stays another node's after that node moves off it: node-b
// reported 192.0.2.20, then moved to .21; node-a now reporting .20 gets no
// certificate for it, nor once node-b is deleted.
func TestDecideServingRemembersAddressesOfOtherNodes(t *testing.T) {
	claims := newAddressClaims()
	nodeA := nodeWithAddresses("node-a", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.20"})
	before := nodeWithAddresses("node-b", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.20"})
	after := nodeWithAddresses("node-b", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.21"})
	claims.record(before)
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		SignerName: certificatesv1.KubeletServingSignerName,
		Request:    servingCSR(t, nodeSubjectFor("node-a"), sans{dns: []string{"node-a"}, ips: []string{"192.0.2.20"}}),
		Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		Username:   "system:node:node-a", Groups: []string{"system:nodes"},
	}}
	for name, nodes := range map[string]nodeMap{
		"node-b moved":   {"node-a": nodeA, "node-b": after},
		"node-b deleted": {"node-a": nodeA},
	} {
		got, msg, err := decide(csr, nodes, claims)
		if err != nil || got != deny || !strings.Contains(msg, "by node node-b") {
			t.Errorf("%s: decide = %v %q %v, want denied naming node-b", name, got, msg, err)
		}
	}
	// Without that history the same request is approved: the refusal is the record's.
	if got, msg, err := decide(csr, nodeMap{"node-a": nodeA, "node-b": after}, newAddressClaims()); err != nil || got != approve {
		t.Errorf("without history: decide = %v %q %v, want approved", got, msg, err)
	}
}

func TestSignIssuesNodeServingCertificate(t *testing.T) {
	dir := t.TempDir()
	servingCA, err := pki.LoadOrCreateCA(dir, "node-serving-ca")
	if err != nil {
		t.Fatal(err)
	}
	clientCA, err := pki.LoadOrCreateCA(dir, "client-ca")
	if err != nil {
		t.Fatal(err)
	}
	s := signer{client: clientCA, serving: servingCA, lifetime: time.Hour}
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		SignerName: certificatesv1.KubeletServingSignerName,
		Request:    servingCSR(t, nodeSubjectFor("node-a"), sans{dns: []string{"node-a", "host-a"}, ips: []string{"192.0.2.10"}}),
		Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
	}}
	certPEM, err := s.sign(csr)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := pki.ParseCertificates(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	c := certs[0]
	if err := c.CheckSignatureFrom(servingCA.Cert); err != nil {
		t.Errorf("not signed by the serving CA: %v", err)
	}
	if c.Subject.CommonName != "system:node:node-a" || !slices.Equal(c.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject = %v", c.Subject)
	}
	if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("ext key usage = %v, want server auth only", c.ExtKeyUsage)
	}
	roots := x509.NewCertPool()
	roots.AddCert(servingCA.Cert)
	for _, host := range []string{"node-a", "host-a", "192.0.2.10"} {
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("certificate does not verify for %s: %v", host, err)
		}
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: "node-b"}); err == nil {
		t.Error("certificate verifies for node-b")
	}

	// Approved by an administrator, but not something the serving CA certifies.
	for name, request := range map[string][]byte{
		"API server's name": servingCSR(t, nodeSubjectFor("node-a"), sans{dns: []string{"kubernetes"}}),
		"not a node":        servingCSR(t, pkix.Name{CommonName: "system:apiserver"}, sans{dns: []string{"node-a"}}),
	} {
		bad := csr.DeepCopy()
		bad.Spec.Request = request
		if _, err := s.sign(bad); err == nil {
			t.Errorf("%s: the signer certified it", name)
		}
	}
	withClientAuth := csr.DeepCopy()
	withClientAuth.Spec.Usages = append(withClientAuth.Spec.Usages, certificatesv1.UsageClientAuth)
	if _, err := s.sign(withClientAuth); err == nil {
		t.Error("the signer certified a serving request with client auth")
	}
}
