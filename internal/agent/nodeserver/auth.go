package nodeserver

import (
	"net/http"
	"slices"
)

// Who may call the node server: the API server's identity, or a member of
// system:masters (admins), as the kubelet's webhook authorizer would allow
// by RBAC. Nodes, controllers and pods may not.
const (
	apiServerUser = "system:apiserver"
	mastersGroup  = "system:masters"
)

// authorize refuses requests without a verified client certificate (401)
// and those whose certificate names someone else (403). The TLS layer has
// already verified the chain against the client CA.
func authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "Unauthorized: a client certificate signed by the cluster's client CA is required", http.StatusUnauthorized)
			return
		}
		subject := r.TLS.VerifiedChains[0][0].Subject
		if subject.CommonName != apiServerUser && !slices.Contains(subject.Organization, mastersGroup) {
			http.Error(w, "Forbidden: user "+subject.CommonName+" may not use the node server", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
