package rbac

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth/berth/internal/auth"
)

// rbacAuthorizer allows what some RBAC binding of the user grants; it has
// no opinion otherwise (the union's default is deny), and none at all
// until its listers have synced, so a half-filled cache never decides.
type rbacAuthorizer struct {
	listers Listers
	synced  func() bool
}

// NewAuthorizer decides from listers once synced reports true.
func NewAuthorizer(listers Listers, synced func() bool) authorizer.Authorizer {
	return authorizer.AuthorizerFunc((&rbacAuthorizer{listers: listers, synced: synced}).authorize)
}

func (a *rbacAuthorizer) authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetUser() == nil || !a.synced() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	var allowedBy string
	err := a.listers.visitRules(attrs.GetUser(), attrs.GetNamespace(), func(g grant) bool {
		if auth.RulesAllow(g.rules, attrs) {
			allowedBy = g.source
			return false
		}
		return true
	})
	if allowedBy != "" {
		return authorizer.DecisionAllow, fmt.Sprintf("RBAC: allowed by %s", allowedBy), nil
	}
	return authorizer.DecisionNoOpinion, "", err
}
