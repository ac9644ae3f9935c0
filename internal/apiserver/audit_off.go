package apiserver

import (
	"net/http"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
)

// withAuditOff marks each request's audit context as audited at level None,
// as filters.WithAudit does for a request its policy leaves out. With no
// audit log there is no WithAudit to do it, and an uninitialised context
// counts as enabled: every annotation the upstream filters add
// (authorization decisions and reasons) was kept for the life of the
// request, ~2 KB for each open watch.
func withAuditOff(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ac := audit.AuditContextFrom(r.Context()); ac != nil {
			_ = ac.Init(audit.RequestAuditConfig{Level: auditinternal.LevelNone}, nil) // fails only if already initialised
		}
		handler.ServeHTTP(w, r)
	})
}
