package auth

import (
	"context"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/pki"
)

// oneSecret serves a single kube-system Secret.
type oneSecret struct{ s *corev1.Secret }

func (o oneSecret) Get(name string) (*corev1.Secret, error) {
	if o.s != nil && o.s.Name == name {
		return o.s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
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
	secret.Name = "bootstrap-token-abcdef"
	tokens := bootstraptoken.NewAuthenticator(oneSecret{secret}, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
