package server_test

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Impersonation headers, as kube-apiserver takes them: an admin acting as
// bob has only bob's rights (403 naming bob), and a service account that
// may not impersonate is refused with 403 rather than acting as itself.
func TestImpersonationActsAsTheImpersonatedUserOnlyWhenAllowed(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	asBob := rest.CopyConfig(s.RESTConfig(t))
	asBob.Impersonate = rest.ImpersonationConfig{UserName: "bob", Groups: []string{"dev"}}
	_, err := kubernetes.NewForConfigOrDie(asBob).CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "bob"`) {
		t.Fatalf("admin impersonating bob lists kube-system secrets: %v; want 403 naming bob", err)
	}
	if _, err := s.Admin.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("admin itself: %v", err)
	}

	tok, err := s.Admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa := rest.AnonymousClientConfig(s.RESTConfig(t))
	sa.BearerToken = tok.Status.Token
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:admin", Groups: []string{"system:masters"}}
	_, err = kubernetes.NewForConfigOrDie(sa).CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot impersonate") {
		t.Fatalf("service account impersonating system:masters: %v; want 403 (cannot impersonate)", err)
	}
}
