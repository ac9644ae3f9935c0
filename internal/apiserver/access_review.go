package apiserver

import (
	"context"
	"fmt"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// accessReview is one kind of authorization.k8s.io/v1 access review: a
// question put to the server's authorizer, answered in the response and
// never stored (`kubectl auth can-i` asks SelfSubjectAccessReviews).
type accessReview struct {
	resource string
	kind     string
	// namespaced reviews (LocalSubjectAccessReview) ask only about their
	// own namespace.
	namespaced bool
	newObj     func() runtime.Object
	// parts returns the review's spec (whose user it is about, unless
	// self) and where its answer goes.
	parts func(runtime.Object) (*authorizationv1.SubjectAccessReviewSpec, *authorizationv1.SubjectAccessReviewStatus)
	// self reviews are about the requesting user.
	self bool
}

func accessReviews() []accessReview {
	return []accessReview{
		{resource: "selfsubjectaccessreviews", kind: "SelfSubjectAccessReview", self: true,
			newObj: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			parts: func(obj runtime.Object) (*authorizationv1.SubjectAccessReviewSpec, *authorizationv1.SubjectAccessReviewStatus) {
				r := obj.(*authorizationv1.SelfSubjectAccessReview)
				spec := &authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: r.Spec.ResourceAttributes, NonResourceAttributes: r.Spec.NonResourceAttributes}
				return spec, &r.Status
			}},
		{resource: "subjectaccessreviews", kind: "SubjectAccessReview",
			newObj: func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
			parts: func(obj runtime.Object) (*authorizationv1.SubjectAccessReviewSpec, *authorizationv1.SubjectAccessReviewStatus) {
				r := obj.(*authorizationv1.SubjectAccessReview)
				return &r.Spec, &r.Status
			}},
		{resource: "localsubjectaccessreviews", kind: "LocalSubjectAccessReview", namespaced: true,
			newObj: func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
			parts: func(obj runtime.Object) (*authorizationv1.SubjectAccessReviewSpec, *authorizationv1.SubjectAccessReviewStatus) {
				r := obj.(*authorizationv1.LocalSubjectAccessReview)
				return &r.Spec, &r.Status
			}},
	}
}

// addAccessReviews serves the access reviews (POST only).
func (a *apiSet) addAccessReviews(f *scopeFactory, authz authorizer.Authorizer) error {
	gv := authorizationv1.SchemeGroupVersion
	for _, review := range accessReviews() {
		res := &resource{gvr: gv.WithResource(review.resource), kind: review.kind, namespaced: review.namespaced, newObj: review.newObj}
		if err := a.addReview(f, res, &accessReviewREST{review: review, authorizer: authz}); err != nil {
			return err
		}
	}
	return nil
}

// addReview serves a review kind: create only, never stored, and with no
// table form (as for upstream's storage, a Table is answered 406).
func (a *apiSet) addReview(f *scopeFactory, res *resource, r rest.Creater) error {
	ep, err := f.postEndpoint(res, "", res.gvk(), nil, func(scope *handlers.RequestScope) http.Handler {
		return handlers.CreateResource(r, scope, f.admit)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", res.gvr.Resource, err)
	}
	a.endpoints[endpointKey{res.gvr.Group, res.gvr.Version, res.gvr.Resource, ""}] = ep
	return nil
}

type accessReviewREST struct {
	review     accessReview
	authorizer authorizer.Authorizer
}

var _ rest.Creater = (*accessReviewREST)(nil)

func (r *accessReviewREST) New() runtime.Object { return r.review.newObj() }
func (r *accessReviewREST) Destroy()            {}

func (r *accessReviewREST) Create(ctx context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	answer := r.review.newObj()
	// Only the question is echoed back: whatever metadata the client sent
	// (or the handler added) is not the server's to keep.
	spec, _ := r.review.parts(obj)
	setSpec(answer, obj)
	_, status := r.review.parts(answer)
	who, err := r.subject(ctx, spec)
	if err != nil {
		return nil, err
	}
	attrs, err := r.attributes(ctx, who, spec)
	if err != nil {
		return nil, err
	}
	decision, reason, err := r.authorizer.Authorize(ctx, attrs)
	status.Allowed = decision == authorizer.DecisionAllow
	status.Denied = decision == authorizer.DecisionDeny
	status.Reason = reason
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return answer, nil
}

// setSpec copies obj's spec into answer (both of the review's kind).
func setSpec(answer, obj runtime.Object) {
	switch a := answer.(type) {
	case *authorizationv1.SelfSubjectAccessReview:
		a.Spec = obj.(*authorizationv1.SelfSubjectAccessReview).Spec
	case *authorizationv1.SubjectAccessReview:
		a.Spec = obj.(*authorizationv1.SubjectAccessReview).Spec
	case *authorizationv1.LocalSubjectAccessReview:
		a.Spec = obj.(*authorizationv1.LocalSubjectAccessReview).Spec
		a.Namespace = obj.(*authorizationv1.LocalSubjectAccessReview).Namespace
	}
}

// subject is the user the review asks about.
func (r *accessReviewREST) subject(ctx context.Context, spec *authorizationv1.SubjectAccessReviewSpec) (user.Info, error) {
	if r.review.self {
		u, ok := genericapirequest.UserFrom(ctx)
		if !ok {
			return nil, apierrors.NewBadRequest("no user in the request")
		}
		return u, nil
	}
	if spec.User == "" && len(spec.Groups) == 0 {
		return nil, r.invalid("spec", "at least one of user or group must be specified")
	}
	extra := map[string][]string{}
	for k, v := range spec.Extra {
		extra[k] = v
	}
	return &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups, Extra: extra}, nil
}

// attributes turns the review's question into what the authorizer judges.
func (r *accessReviewREST) attributes(ctx context.Context, who user.Info, spec *authorizationv1.SubjectAccessReviewSpec) (authorizer.AttributesRecord, error) {
	res, nonRes := spec.ResourceAttributes, spec.NonResourceAttributes
	if (res == nil) == (nonRes == nil) {
		return authorizer.AttributesRecord{}, r.invalid("spec", "exactly one of nonResourceAttributes or resourceAttributes must be specified")
	}
	if nonRes != nil {
		return authorizer.AttributesRecord{User: who, Verb: nonRes.Verb, Path: nonRes.Path}, nil
	}
	if r.review.namespaced {
		if ns, _ := genericapirequest.NamespaceFrom(ctx); res.Namespace != ns {
			return authorizer.AttributesRecord{}, r.invalid("spec.resourceAttributes.namespace", "must match metadata.namespace")
		}
	}
	return authorizer.AttributesRecord{
		User: who, Verb: res.Verb, Namespace: res.Namespace, APIGroup: res.Group, APIVersion: res.Version,
		Resource: res.Resource, Subresource: res.Subresource, Name: res.Name, ResourceRequest: true,
	}, nil
}

// invalid is the 422 upstream answers a malformed review with.
func (r *accessReviewREST) invalid(path, msg string) error {
	gk := schema.GroupKind{Group: authorizationv1.GroupName, Kind: r.review.kind}
	return apierrors.NewInvalid(gk, "", field.ErrorList{field.Invalid(field.NewPath(path), nil, msg)})
}
