package apiserver

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// withImpersonation is kube-apiserver's impersonation filter at its place
// in the chain (after authentication and audit, before authorization):
// Impersonate-User, -Group, -Uid and -Extra-* headers make the request
// the impersonated user's once the authorizer lets the requester
// impersonate them (the "impersonate" verb), and are refused with 403
// otherwise.
func withImpersonation(handler http.Handler, a authorizer.Authorizer, s runtime.NegotiatedSerializer) http.Handler {
	if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.ConstrainedImpersonation) {
		return impersonation.WithConstrainedImpersonation(handler, a, s)
	}
	return impersonation.WithImpersonation(handler, a, s)
}
