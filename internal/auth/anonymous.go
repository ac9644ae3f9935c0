package auth

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// publicAnonymous lets a request with no credentials at all through as
// system:anonymous (group system:unauthenticated) on the paths upstream's
// system:public-info-viewer role covers — health and version, for load
// balancers and probes. Anywhere else, and whenever credentials were given
// but not accepted, the request stays unauthenticated: 401.
type publicAnonymous struct{ next authenticator.Request }

func (p publicAnonymous) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	resp, ok, err := p.next.AuthenticateRequest(req)
	if ok || err != nil || hasCredentials(req) || !isPublicPath(req.URL.Path) {
		return resp, ok, err
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}}, true, nil
}

func isPublicPath(path string) bool {
	switch strings.TrimSuffix(path, "/") {
	case "/healthz", "/livez", "/readyz", "/version":
		return true
	}
	return false
}

func hasCredentials(req *http.Request) bool {
	return req.Header.Get("Authorization") != "" || (req.TLS != nil && len(req.TLS.PeerCertificates) > 0)
}
