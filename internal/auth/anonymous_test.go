package auth

import (
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

// With no credentials, only health and version are reachable, as
// system:anonymous outside system:authenticated; credentials that fail
// stay a failure even there.
func TestAnonymousOnlyOnPublicPaths(t *testing.T) {
	authn := NewAuthenticator(nil)
	for _, tc := range []struct {
		path, authz string
		want        bool
	}{
		{"/healthz", "", true},
		{"/livez", "", true},
		{"/readyz/", "", true},
		{"/version", "", true},
		{"/api/v1/pods", "", false},
		{"/healthz/etcd", "", false},
		{"/metrics", "", false},
		{"/healthz", "Bearer not-a-token", false},
	} {
		req := httptest.NewRequest("GET", tc.path, nil)
		if tc.authz != "" {
			req.Header.Set("Authorization", tc.authz)
		}
		resp, ok, _ := authn.AuthenticateRequest(req)
		if ok != tc.want {
			t.Errorf("%s (Authorization %q): authenticated=%v, want %v", tc.path, tc.authz, ok, tc.want)
			continue
		}
		if ok && (resp.User.GetName() != user.Anonymous || len(resp.User.GetGroups()) != 1 || resp.User.GetGroups()[0] != user.AllUnauthenticated) {
			t.Errorf("%s: user %v, want system:anonymous in system:unauthenticated only", tc.path, resp.User)
		}
	}
}
