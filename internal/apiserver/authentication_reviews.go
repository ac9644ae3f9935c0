package apiserver

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	// The authentication group's internal types and conversions, which
	// upstream's review storage takes.
	_ "k8s.io/kubernetes/pkg/apis/authentication/install"
	"k8s.io/kubernetes/pkg/registry/authentication/selfsubjectreview"
	"k8s.io/kubernetes/pkg/registry/authentication/tokenreview"
)

// addAuthenticationReviews serves authentication.k8s.io/v1 TokenReviews
// (whom does this token authenticate as, for these audiences: what
// webhook token authenticators and in-cluster proxies ask) and
// SelfSubjectReviews (`kubectl auth whoami`) with upstream's own storage,
// create-only, never stored and with no table form. Tokens are checked by the server's own
// authenticator; audiences default to the API's (apiAudiences).
func (a *apiSet) addAuthenticationReviews(f *scopeFactory, authn authenticator.Request, apiAudiences []string) error {
	gv := authenticationv1.SchemeGroupVersion
	reviews := []struct {
		resource, kind string
		upstream       rest.Creater
		newV1          func() runtime.Object
	}{
		{"tokenreviews", "TokenReview", tokenreview.NewREST(authn, apiAudiences), func() runtime.Object { return &authenticationv1.TokenReview{} }},
		{"selfsubjectreviews", "SelfSubjectReview", selfsubjectreview.NewREST(), func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }},
	}
	for _, review := range reviews {
		res := &resource{gvr: gv.WithResource(review.resource), kind: review.kind, newObj: review.newV1}
		if err := a.addReview(f, res, &internalReviewREST{upstream: review.upstream, newV1: review.newV1}); err != nil {
			return err
		}
	}
	return nil
}

// internalReviewREST serves a create-only upstream storage that takes and
// answers internal types: berth's handlers speak v1, so the request is
// converted in and the answer out.
type internalReviewREST struct {
	upstream rest.Creater
	newV1    func() runtime.Object
}

var _ rest.Creater = (*internalReviewREST)(nil)

func (r *internalReviewREST) New() runtime.Object { return r.newV1() }
func (r *internalReviewREST) Destroy()            {}

func (r *internalReviewREST) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	in := r.upstream.New()
	if err := legacyscheme.Scheme.Convert(obj, in, nil); err != nil {
		return nil, err
	}
	answer, err := r.upstream.Create(ctx, in, validate, options)
	if err != nil {
		return nil, err
	}
	out := r.newV1()
	if err := legacyscheme.Scheme.Convert(answer, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// apiAudiences are the audiences a token must be for to authenticate to
// this API: the service account tokens' default audiences, as
// kube-apiserver's --api-audiences defaults to its issuer.
func apiAudiences(cfg *Config) []string {
	if cfg.ServiceAccountTokens == nil {
		return nil
	}
	return cfg.ServiceAccountTokens.Audiences
}
