package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/wait"
)

// widgetSigner is a signer no part of berth acts for.
const widgetSigner = "example.com/widgets"

// TestCertificateAdmission: kube-apiserver's CertificateApproval,
// CertificateSigning, CertificateSubjectRestriction and
// ClusterTrustBundleAttest plugins. Rights over CSRs or bundles are not
// enough: approving needs `approve`, issuing `sign` and publishing a
// bundle `attest` on the signer, and no kube-apiserver-client CSR may ask
// for system:masters.
func TestCertificateAdmission(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	csrs := s.Admin.CertificatesV1().CertificateSigningRequests()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	request := func(name, signer string, subject pkix.Name) *certificatesv1.CertificateSigningRequest {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
		if err != nil {
			t.Fatal(err)
		}
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
				Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}}
	}

	t.Run("approve needs approve on the signer", func(t *testing.T) {
		csr, err := csrs.Create(ctx, request("widget-approval", widgetSigner, pkix.Name{CommonName: "w"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: "True", Reason: "Test"}}
		approver := grantedClient(t, s, "approver", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests/approval"}})
		_, err = approver.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user not permitted to approve requests with signerName "example.com/widgets"`) {
			t.Fatalf("approval without approve on the signer: %v, want upstream's Forbidden", err)
		}
		grant(t, s.Admin, "approver", rbacv1.PolicyRule{Verbs: []string{"approve"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{widgetSigner}})
		retryForbidden(t, "approval once approve on the signer is granted", func() error {
			_, err := approver.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
			return err
		})
	})

	t.Run("issue needs sign on the signer", func(t *testing.T) {
		csr, err := csrs.Create(ctx, request("widget-signing", widgetSigner, pkix.Name{CommonName: "w"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: "True", Reason: "Test"}}
		if csr, err = csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		csr.Status.Certificate = selfSignedPEM(t, key, false)
		signer := grantedClient(t, s, "signer", rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests/status"}})
		_, err = signer.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user not permitted to sign requests with signerName "example.com/widgets"`) {
			t.Fatalf("certificate without sign on the signer: %v, want upstream's Forbidden", err)
		}
		grant(t, s.Admin, "signer", rbacv1.PolicyRule{Verbs: []string{"sign"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}})
		retryForbidden(t, "certificate once sign on the signer's domain is granted", func() error {
			_, err := signer.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
			return err
		})
	})

	t.Run("no client certificate for system:masters", func(t *testing.T) {
		_, err := csrs.Create(ctx, request("masters", certificatesv1.KubeAPIServerClientSignerName,
			pkix.Name{CommonName: "mallory", Organization: []string{"system:masters"}}), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "system:masters") {
			t.Fatalf("kube-apiserver-client CSR for system:masters: %v, want upstream's Forbidden", err)
		}
		if _, err := csrs.Create(ctx, request("plain-client", certificatesv1.KubeAPIServerClientSignerName,
			pkix.Name{CommonName: "alice", Organization: []string{"dev"}}), metav1.CreateOptions{}); err != nil {
			t.Fatalf("kube-apiserver-client CSR for another group: %v", err)
		}
	})

	t.Run("a bundle needs attest on its signer", func(t *testing.T) {
		bundle := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:widgets:roots"},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: widgetSigner, TrustBundle: string(selfSignedPEM(t, key, true))}}
		publisher := grantedClient(t, s, "publisher", rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"clustertrustbundles"}})
		_, err := publisher.CertificatesV1().ClusterTrustBundles().Create(ctx, bundle, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user not permitted to attest for signerName "example.com/widgets"`) {
			t.Fatalf("bundle without attest on its signer: %v, want upstream's Forbidden", err)
		}
		grant(t, s.Admin, "publisher", rbacv1.PolicyRule{Verbs: []string{"attest"}, APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{widgetSigner}})
		retryForbidden(t, "bundle once attest on its signer is granted", func() error {
			_, err := publisher.CertificatesV1().ClusterTrustBundles().Create(ctx, bundle, metav1.CreateOptions{})
			return err
		})
	})
}

// grantedClient is a client impersonating user, who is granted rules.
func grantedClient(t *testing.T, s *cluster.Server, user string, rules ...rbacv1.PolicyRule) kubernetes.Interface {
	t.Helper()
	grant(t, s.Admin, user, rules...)
	cfg := rest.CopyConfig(s.RESTConfig(t))
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return kubernetes.NewForConfigOrDie(cfg)
}

// grant gives user rules through a new ClusterRole and binding.
func grant(t *testing.T, cs kubernetes.Interface, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	role, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: user + "-"}, Rules: rules}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// retryForbidden retries write while it is Forbidden (the authorizer's
// RBAC cache has yet to see a new grant) and fails on any other error.
func retryForbidden(t *testing.T, what string, write func() error) {
	t.Helper()
	wait.UntilCtx(t, 30*time.Second, what, func(context.Context) error {
		err := write()
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("%s: %v", what, err)
		}
		return err
	})
}

// selfSignedPEM is a certificate for key, a CA when ca.
func selfSignedPEM(t *testing.T, key *ecdsa.PrivateKey, ca bool) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "widgets"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IsCA: ca, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature}
	if ca {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
