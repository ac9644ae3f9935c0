package apiserver

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// podReaderRules says its user may read pods in the asked namespace and
// that the list is incomplete.
type podReaderRules struct{ asked []string }

func (r *podReaderRules) RulesFor(_ context.Context, u user.Info, ns string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	r.asked = append(r.asked, u.GetName()+"@"+ns)
	return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
		[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
		true, nil
}

func TestSelfSubjectRulesReviewAsksTheResolver(t *testing.T) {
	t.Parallel()
	rules := &podReaderRules{}
	s := newTestServerWith(t, func(c *Config) { c.RuleResolver = rules })
	ctx := testContext(t)
	reviews := s.client.AuthorizationV1().SelfSubjectRulesReviews()

	got, err := reviews.Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rules.asked) != 1 || !strings.HasSuffix(rules.asked[0], "@team-a") {
		t.Errorf("resolver asked %v, want one question about team-a", rules.asked)
	}
	st := got.Status
	if !st.Incomplete || len(st.ResourceRules) != 1 || st.ResourceRules[0].Resources[0] != "pods" ||
		len(st.NonResourceRules) != 1 || st.NonResourceRules[0].NonResourceURLs[0] != "/healthz" || got.Spec.Namespace != "team-a" {
		t.Errorf("review = %+v", got)
	}

	before := storeRevision(t, s)
	_, err = reviews.Create(ctx, &authorizationv1.SelfSubjectRulesReview{}, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("a review without a namespace: %v, want 400", err)
	}
	assertStoreUnchanged(t, s, before)
}
