package auth

import (
	"context"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/pki"
)

// kubeSystemSecrets is a lister of kube-system holding secrets.
func kubeSystemSecrets(t *testing.T, secrets ...*corev1.Secret) corelisters.SecretNamespaceLister {
	t.Helper()
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range secrets {
		if err := store.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewSecretLister(store).Secrets(metav1.NamespaceSystem)
}

func TestBootstrapTokenInTheChain(t *testing.T) {
	cluster, err := pki.LoadOrCreateCluster(t.TempDir(), pki.ServingNames{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cluster.ClientCA.Cert)
	secret := &corev1.Secret{Type: "bootstrap.kubernetes.io/token", Data: map[string][]byte{
		"token-id": []byte("abcdef"), "token-secret": []byte("0123456789abcdef"), "usage-bootstrap-authentication": []byte("true"),
	}}
	secret.Name, secret.Namespace = "bootstrap-token-abcdef", metav1.NamespaceSystem
	tokens := bootstraptoken.NewAuthenticator(kubeSystemSecrets(t, secret), slog.New(slog.NewTextHandler(io.Discard, nil)))
	authn := NewAuthenticator(pool, tokens)

	for _, tc := range []struct {
		name, bearer string
		wantOK       bool
	}{
		{"bootstrap token", "abcdef.0123456789abcdef", true},
		{"wrong secret", "abcdef.0000000000000000", false},
		{"unknown token", "zzzzzz.0123456789abcdef", false},
		{"anonymous", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://x/api", nil)
			if tc.bearer != "" {
				req.Header.Set("Authorization", "Bearer "+tc.bearer)
			}
			resp, ok, _ := authn.AuthenticateRequest(req)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if resp.User.GetName() != "system:bootstrap:abcdef" ||
				!slices.Contains(resp.User.GetGroups(), "system:bootstrappers") ||
				!slices.Contains(resp.User.GetGroups(), user.AllAuthenticated) {
				t.Errorf("user = %q groups %q", resp.User.GetName(), resp.User.GetGroups())
			}
			if req.Header.Get("Authorization") != "" {
				t.Error("the token was left in the request for later handlers to see")
			}
		})
	}
}
