package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth/berth/internal/auth/node"
	"github.com/berth/berth/internal/pki"
)

func TestCertificateAuthenticationAndMastersAuthorization(t *testing.T) {
	cluster, err := pki.LoadOrCreateCluster(t.TempDir(), pki.ServingNames{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cluster.ClientCA.Cert)
	authn := NewAuthenticator(pool)
	authz, err := NewAuthorizer(node.NewAuthorizer(node.NewGraph()), BootstrapPolicy())
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
		{"controllers are not masters", cluster.ClientCA, pki.ControllerIdentity, "system:kube-controller-manager", false},
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
			if !slices.Contains(resp.User.GetGroups(), user.AllAuthenticated) {
				t.Errorf("groups %v lack %s", resp.User.GetGroups(), user.AllAuthenticated)
			}
			decision, _, err := authz.Authorize(context.Background(), authorizer.AttributesRecord{
				User: resp.User, Verb: "impersonate", Resource: "users", ResourceRequest: true, // only masters may
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

func TestBootstrapPolicy(t *testing.T) {
	authz, err := NewAuthorizer(node.NewAuthorizer(node.NewGraph()), BootstrapPolicy())
	if err != nil {
		t.Fatal(err)
	}
	someone := &user.DefaultInfo{Name: "someone", Groups: []string{user.AllAuthenticated}}
	nodeA := &user.DefaultInfo{Name: node.UserPrefix + "node-a", Groups: []string{NodesGroup, user.AllAuthenticated}}
	res := func(u user.Info, verb, group, resource, sub string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: "default", Name: "x", ResourceRequest: true}
	}
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"authenticated user discovers", authorizer.AttributesRecord{User: someone, Verb: "get", Path: "/apis/coordination.k8s.io/v1"}, true},
		{"authenticated user cannot list pods", res(someone, "list", "", "pods", ""), false},
		{"node registers through the node authorizer", res(nodeA, "create", "", "nodes", ""), true},
		{"node gets no group-wide pod rights", res(nodeA, "list", "", "pods", ""), false},
		{"node gets no group-wide secret rights", res(nodeA, "get", "", "secrets", ""), false},
		{"node watches endpointslices as system:node-proxier", res(nodeA, "watch", "discovery.k8s.io", "endpointslices", ""), true},
		{"node lists endpointslices as system:node-proxier", res(nodeA, "list", "discovery.k8s.io", "endpointslices", ""), true},
		{"node cannot write endpointslices", res(nodeA, "create", "discovery.k8s.io", "endpointslices", ""), false},
		{"node discovers", authorizer.AttributesRecord{User: nodeA, Verb: "get", Path: "/api"}, true},
		{"authenticated user cannot read metrics path", authorizer.AttributesRecord{User: someone, Verb: "get", Path: "/metrics"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, _, err := authz.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got := d == authorizer.DecisionAllow; got != tc.allow {
				t.Errorf("allowed = %v, want %v", got, tc.allow)
			}
		})
	}
}
