package server_test

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAuthenticationReviews checks authentication.k8s.io/v1 as
// kube-apiserver serves it: a TokenReview of a service account token names
// the account (and the audiences it was checked for), a forged token is
// not authenticated, an empty one is refused, and a SelfSubjectReview
// names the caller.
func TestAuthenticationReviews(t *testing.T) {
	t.Parallel()
	srv := startServiceServer(t)
	cs := srv.Admin
	ctx := context.Background()
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reviewer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "reviewer", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	review, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token.Status.Token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token review: %v", err)
	}
	if !review.Status.Authenticated || review.Status.User.Username != "system:serviceaccount:default:reviewer" || len(review.Status.Audiences) == 0 {
		t.Errorf("review of the account's token: %+v, want it authenticated as the account for the API's audiences", review.Status)
	}
	forged, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token.Status.Token + "x"}}, metav1.CreateOptions{})
	if err != nil || forged.Status.Authenticated {
		t.Errorf("review of a forged token: %v, %+v; want not authenticated", err, forged)
	}
	if _, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("review without a token: %v, want 400", err)
	}
	self, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || self.Status.UserInfo.Username == "" {
		t.Fatalf("self subject review: %v, %+v", err, self)
	}
	if got := self.Status.UserInfo.Groups; len(got) == 0 {
		t.Errorf("self subject review groups %v, want the admin's", got)
	}
}
