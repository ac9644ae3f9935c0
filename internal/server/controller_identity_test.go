package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

// TestControllersActAsTheirServiceAccounts: each of upstream's controllers
// acts as its kube-system service account, as kube-controller-manager's
// --use-service-account-credentials, so the stored system:controller:
// roles are what authorizes it: with pod creation taken out of its role
// the ReplicaSet controller is refused (and says so in an event), and once
// the rule is back it creates the pods. The accounts exist as objects.
func TestControllersActAsTheirServiceAccounts(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "identity")
	// As kube-controller-manager's client builder, the server creates the
	// accounts its controllers act as.
	for _, name := range []string{"replicaset-controller", "namespace-controller", "node-controller", "certificate-controller", "generic-garbage-collector", "storage-version-migrator-controller"} {
		wait.UntilCtx(t, time.Minute, "the ServiceAccount kube-system/"+name, func(ctx context.Context) error {
			_, err := s.Admin.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
			return err
		})
	}
	const role = "system:controller:replicaset-controller"
	roles := s.Admin.RbacV1().ClusterRoles()
	stored, err := roles.Get(ctx, role, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the default role %s: %v", role, err)
	}
	narrowed := stored.DeepCopy()
	for i, rule := range narrowed.Rules {
		if slices.Contains(rule.Resources, "pods") {
			narrowed.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == "create" || v == "*" })
		}
	}
	if _, err := roles.Update(ctx, narrowed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The server's authorizer drops the grant once its cache sees the change.
	wait.UntilCtx(t, 30*time.Second, "the authorizer to see the narrowed role", func(ctx context.Context) error {
		allowed, err := canCreatePods(ctx, s.Admin, "system:serviceaccount:kube-system:replicaset-controller")
		if err == nil && allowed {
			err = fmt.Errorf("still allowed")
		}
		return err
	})

	selector := map[string]string{"app": "identity"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "identity"}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: selector},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := s.Admin.AppsV1().ReplicaSets("identity").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilCtx(t, time.Minute, "the ReplicaSet controller's FailedCreate event naming its service account", func(ctx context.Context) error {
		events, err := s.Admin.CoreV1().Events("identity").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" && strings.Contains(e.Message, `User "system:serviceaccount:kube-system:replicaset-controller" cannot create resource "pods"`) {
				return nil
			}
		}
		var seen []string
		for _, e := range events.Items {
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return fmt.Errorf("no refusal among events %q", seen)
	})
	if pods, err := s.Admin.CoreV1().Pods("identity").List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods while the controller's binding is gone: %d (%v), want none", len(pods.Items), err)
	}

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := roles.Get(ctx, role, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Rules = stored.Rules
		_, err = roles.Update(ctx, current, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	wait.UntilCtx(t, 2*time.Minute, "the ReplicaSet's two pods once the binding is back", func(ctx context.Context) error {
		pods, err := s.Admin.CoreV1().Pods("identity").List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
		if err != nil {
			return err
		}
		if len(pods.Items) != 2 {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		return nil
	})
}

// canCreatePods asks the server whether user may create pods in namespace
// identity.
func canCreatePods(ctx context.Context, cs kubernetes.Interface, user string) (bool, error) {
	review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "identity", Verb: "create", Resource: "pods"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}
