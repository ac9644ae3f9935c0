package apiserver

import (
	"bytes"
	"encoding/base64"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A self-signed CA (upstream's storage test data).
const testTrustBundle = `-----BEGIN CERTIFICATE-----
MIIBBDCBt6ADAgECAgEAMAUGAytlcDAQMQ4wDAYDVQQDEwVyb290MTAiGA8wMDAx
MDEwMTAwMDAwMFoYDzAwMDEwMTAxMDAwMDAwWjAQMQ4wDAYDVQQDEwVyb290MTAq
MAUGAytlcAMhAF2MoFeGa97gK2NGT1h6p1/a1GlMXAXbcjI/OShyIobPozIwMDAP
BgNVHRMBAf8EBTADAQH/MB0GA1UdDgQWBBTWDdK2CNQiHqRjPaAWYPPtIykQgjAF
BgMrZXADQQCtom9WGl7m2SAa4tXM9Soo/mbInBsRhn187BMoqTAHInHchKup5/3y
l1tYJSZZsEXnXrCvw2qLCBNif6+2YYgE
-----END CERTIFICATE-----
`

// TestCertificateKindsAsKubeAPIServer serves ClusterTrustBundles and
// PodCertificateRequests as kube-apiserver does: upstream's validation (a
// bundle's name starts with its signer's; a request's spec is immutable),
// v1beta1 as the stored version, the bundles' signer field selector and
// kubectl's columns.
func TestCertificateKindsAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	certificates := s.client.CertificatesV1()

	bundle := func(name, signer string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: testTrustBundle}}
	}
	for _, b := range []*certificatesv1.ClusterTrustBundle{bundle("example.com:signer:one", "example.com/signer"), bundle("unsigned", "")} {
		if _, err := certificates.ClusterTrustBundles().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ClusterTrustBundle %s: %v", b.Name, err)
		}
	}
	_, err := certificates.ClusterTrustBundles().Create(ctx, bundle("other-name", "example.com/signer"), metav1.CreateOptions{})
	expectInvalidFields(t, "a bundle whose name does not start with its signer's", err, "metadata.name")
	if kv, err := s.store.Get(ctx, "/registry/clustertrustbundles/unsigned"); err != nil || !bytes.Contains(kv.Value, []byte("certificates.k8s.io/v1beta1")) {
		t.Fatalf("ClusterTrustBundle stored as %q, %v; want certificates.k8s.io/v1beta1 under kube-apiserver's key", kv.Value, err)
	}
	signed, err := certificates.ClusterTrustBundles().List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=example.com/signer"})
	if err != nil || len(signed.Items) != 1 || signed.Items[0].Name != "example.com:signer:one" {
		t.Fatalf("bundles of example.com/signer: %v, %+v; want example.com:signer:one alone", err, signed)
	}

	req := &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: "req"}, Spec: certificatesv1.PodCertificateRequestSpec{
		SignerName: "example.com/signer", PodName: "pod-1", PodUID: "pod-uid-1", ServiceAccountName: "sa-1", ServiceAccountUID: "sa-uid-1",
		NodeName: "node-1", NodeUID: "node-uid-1", MaxExpirationSeconds: new(int32(86400)),
		// Upstream's storage test data: an ed25519 key's request, which
		// proves possession of the key.
		StubPKCS10Request: mustDecodeBase64(t, "MIGNMEECAQAwDjEMMAoGA1UEAxMDZm9vMCowBQYDK2VwAyEA33notc99UJwFQmOojmMx5+OHh3eSxnCXPD8y4+3fCOigADAFBgMrZXADQQB201a14Mlk73XPyT7Ff/Ln0SIDL/YO4MIqPDYnpO1pA2s3vyo0H8qkvxo9WMNLeY5MZa2uG3gqZzXjjyWV38QA"),
	}}
	created, err := certificates.PodCertificateRequests("default").Create(ctx, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PodCertificateRequest: %v", err)
	}
	created.Spec.PodName = "pod-2"
	_, err = certificates.PodCertificateRequests("default").Update(ctx, created, metav1.UpdateOptions{})
	expectInvalidFields(t, "a change to a request's spec", err, "spec")
	if kv, err := s.store.Get(ctx, "/registry/podcertificaterequests/default/req"); err != nil || !bytes.Contains(kv.Value, []byte("certificates.k8s.io/v1beta1")) {
		t.Fatalf("PodCertificateRequest stored as %q, %v; want certificates.k8s.io/v1beta1 under kube-apiserver's key", kv.Value, err)
	}
	cols, rows := tableOf(t, s, "/apis/certificates.k8s.io/v1/namespaces/default/podcertificaterequests/req")
	if cols != "Name PodName ServiceAccountName NodeName SignerName State UnverifiedUserAnnotations" || len(rows) != 1 || rows[0].Cells[5] != "Pending" {
		t.Fatalf("PodCertificateRequest table columns %q rows %+v, want upstream's", cols, rows)
	}
}

func mustDecodeBase64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return b
}
