package clusterroleaggregation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/controller/clusterroleaggregation"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/testkit/apitest"
	"github.com/berth/berth/internal/testkit/wait"
)

const (
	toView = "rbac.authorization.k8s.io/aggregate-to-view"
	toEdit = "rbac.authorization.k8s.io/aggregate-to-edit"
)

func start(t *testing.T) kubernetes.Interface {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(apitest.Start(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- clusterroleaggregation.Run(ctx, informeropts.ControllerConfig{Client: client, Logger: apitest.Logger(t)})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return client
}

func read(resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: resources}
}

// aggregated is a ClusterRole filled from the roles labelled selectLabel,
// itself labelled with labels.
func aggregated(name, selectLabel string, labels map[string]string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{selectLabel: "true"}}}}}
}

func labelled(name, label string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{label: "true"}}, Rules: rules}
}

// waitRules waits until the role's rules are want.
func waitRules(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, want ...rbacv1.PolicyRule) {
	t.Helper()
	wait.UntilNil(t, time.Minute, fmt.Sprintf("%s to have rules %v", name, want), func() error {
		role, err := c.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := role.Rules; !equality.Semantic.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
			return fmt.Errorf("rules %v", got)
		}
		return nil
	})
}

func TestAggregatesLabelledRoles(t *testing.T) {
	ctx := context.Background()
	c := start(t)
	create := func(r *rbacv1.ClusterRole) {
		t.Helper()
		if _, err := c.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// upstream's shape: view's rules come from roles labelled
	// aggregate-to-view, and view is itself labelled aggregate-to-edit.
	create(aggregated("view", toView, map[string]string{toEdit: "true"}))
	create(aggregated("edit", toEdit, nil))
	create(labelled("base-view", toView, read("pods")))
	create(labelled("base-edit", toEdit, rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods"}}))
	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}, Rules: []rbacv1.PolicyRule{read("secrets")}})
	waitRules(ctx, t, c, "view", read("pods"))
	// edit: base-edit's rule, then view's (roles in name order), once each.
	waitRules(ctx, t, c, "edit", rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods"}}, read("pods"))

	t.Run("a new labelled role extends view and, through view, edit", func(t *testing.T) {
		create(labelled("leases-view", toView, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}}))
		leases := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}}
		waitRules(ctx, t, c, "view", read("pods"), leases)
		waitRules(ctx, t, c, "edit", rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods"}}, read("pods"), leases)
	})
	t.Run("a changed rule is followed", func(t *testing.T) {
		r, err := c.RbacV1().ClusterRoles().Get(ctx, "base-view", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r.Rules = []rbacv1.PolicyRule{read("pods", "configmaps")}
		if _, err := c.RbacV1().ClusterRoles().Update(ctx, r, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRules(ctx, t, c, "view", read("pods", "configmaps"), rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}})
	})
	t.Run("removing the label or the role takes its rules away", func(t *testing.T) {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, toView)
		if _, err := c.RbacV1().ClusterRoles().Patch(ctx, "leases-view", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRules(ctx, t, c, "view", read("pods", "configmaps"))
		if err := c.RbacV1().ClusterRoles().Delete(ctx, "base-view", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRules(ctx, t, c, "view")
		waitRules(ctx, t, c, "edit", rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods"}})
	})
}
