package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth/berth/internal/pki"
)

func TestCertificateAuthenticationAndMastersOnlyAuthorization(t *testing.T) {
	cluster, err := pki.LoadOrCreateCluster(t.TempDir(), pki.ServingNames{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cluster.ClientCA.Cert)
	authn := NewAuthenticator(pool)
	authz, err := NewAuthorizer()
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name      string
		ca        *pki.CA
		id        pki.Identity
		wantUser  string
		wantAllow bool
	}{
		{"admin", cluster.ClientCA, pki.AdminIdentity, "berth-admin", true},
		{"scheduler is not a master", cluster.ClientCA, pki.SchedulerIdentity, "system:kube-scheduler", false},
		{"foreign CA", foreignCA(t), pki.AdminIdentity, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := requestWithCert(t, tc.ca, tc.id)
			resp, ok, err := authn.AuthenticateRequest(req)
			if tc.wantUser == "" {
				if ok {
					t.Fatalf("authenticated %v from a foreign CA", resp.User)
				}
				return
			}
			if !ok || err != nil || resp.User.GetName() != tc.wantUser {
				t.Fatalf("authenticate = %v, %v, %v; want %s", resp, ok, err, tc.wantUser)
			}
			decision, _, err := authz.Authorize(context.Background(), authorizer.AttributesRecord{
				User: resp.User, Verb: "list", Resource: "pods", ResourceRequest: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := decision == authorizer.DecisionAllow; got != tc.wantAllow {
				t.Errorf("allowed = %v, want %v", got, tc.wantAllow)
			}
		})
	}
	decision, _, _ := authz.Authorize(context.Background(), authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "system:anonymous"}, Verb: "get"})
	if decision == authorizer.DecisionAllow {
		t.Error("anonymous allowed")
	}
}

func foreignCA(t *testing.T) *pki.CA {
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "foreign")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func requestWithCert(t *testing.T, ca *pki.CA, id pki.Identity) *http.Request {
	certPEM, _, err := ca.Issue(id)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := pki.ParseCertificates(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1/api", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: certs}
	return req
}
