package apiserver

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// addRulesReview serves SelfSubjectRulesReview (POST only): the rules the
// requesting user holds in a namespace, as `kubectl auth can-i --list`
// asks. Without a resolver every answer is an empty, incomplete list.
func (a *apiSet) addRulesReview(f *scopeFactory, rules authorizer.RuleResolver) error {
	gv := authorizationv1.SchemeGroupVersion
	res := &resource{gvr: gv.WithResource("selfsubjectrulesreviews"), kind: "SelfSubjectRulesReview",
		newObj: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }}
	return a.addReview(f, res, &rulesReviewREST{rules: rules})
}

type rulesReviewREST struct{ rules authorizer.RuleResolver }

var _ rest.Creater = (*rulesReviewREST)(nil)

func (r *rulesReviewREST) New() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }
func (r *rulesReviewREST) Destroy()            {}

func (r *rulesReviewREST) Create(ctx context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review := obj.(*authorizationv1.SelfSubjectRulesReview)
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user in the request")
	}
	if review.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("spec.namespace is required: rules are listed for one namespace (with the cluster-wide ones)")
	}
	answer := &authorizationv1.SelfSubjectRulesReview{Spec: review.Spec}
	if r.rules == nil {
		answer.Status.Incomplete = true
		answer.Status.EvaluationError = "this server does not list rules"
		return answer, nil
	}
	resource, nonResource, incomplete, err := r.rules.RulesFor(ctx, u, review.Spec.Namespace)
	answer.Status.Incomplete = incomplete
	if err != nil {
		answer.Status.EvaluationError = err.Error()
	}
	for _, rule := range resource {
		answer.Status.ResourceRules = append(answer.Status.ResourceRules, authorizationv1.ResourceRule{
			Verbs: rule.GetVerbs(), APIGroups: rule.GetAPIGroups(), Resources: rule.GetResources(), ResourceNames: rule.GetResourceNames(),
		})
	}
	for _, rule := range nonResource {
		answer.Status.NonResourceRules = append(answer.Status.NonResourceRules, authorizationv1.NonResourceRule{
			Verbs: rule.GetVerbs(), NonResourceURLs: rule.GetNonResourceURLs(),
		})
	}
	return answer, nil
}
