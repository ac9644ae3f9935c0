package attack

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// aggregationEscalation: the attacker may create ClusterRoles and
// ClusterRoleBindings (and bind only its own role), so the escalation
// check lets it write any rule it holds. A ClusterRole with no rules but an
// aggregationRule selecting what aggregates into `admin` would be filled by
// the aggregation controller with rules the attacker does not hold;
// upstream lets only cluster-admins use aggregationRule.
func aggregationEscalation(t *testing.T, c *cluster, mallory kubernetes.Interface) {
	const writer, name = "attack-rbac-writer", "attack-aggregated"
	ctx := t.Context()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: writer},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles", "clusterrolebindings"}, Verbs: []string{"create", "get", "list"}},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{writer}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: writer},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: writer},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: attacker}},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = c.admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		_ = c.admin.RbacV1().ClusterRoleBindings().Delete(ctx, writer, metav1.DeleteOptions{})
		_ = c.admin.RbacV1().ClusterRoles().Delete(ctx, writer, metav1.DeleteOptions{})
	})
	if _, err := c.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.poll(t, attacker+"'s grant to list ClusterRoles to take effect", time.Minute, func(ctx context.Context) (bool, error) {
		_, err := mallory.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})

	before := c.clusterRoleNames(t)
	aggregated := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
		}},
	}
	_, err := mallory.RbacV1().ClusterRoles().Create(ctx, aggregated, metav1.CreateOptions{})
	t.Logf("create ClusterRole %s with an aggregationRule: %v", name, err)
	const want = "must have cluster-admin privileges to use the aggregationRule"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("create ClusterRole %s aggregating aggregate-to-admin as %s: err = %v, want 403 Forbidden containing %q", name, attacker, err, want)
	}
	got, err := c.admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		var rules int
		if got != nil {
			rules = len(got.Rules)
		}
		t.Errorf("ClusterRole %s after the refused create: get = %v (aggregated %d rules), want NotFound", name, err, rules)
	}
	if after := c.clusterRoleNames(t); !slices.Equal(before, after) {
		t.Errorf("ClusterRoles changed: %d before, %d after", len(before), len(after))
	}
}

func (c *cluster) clusterRoleNames(t *testing.T) []string {
	t.Helper()
	list, err := c.admin.RbacV1().ClusterRoles().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names
}
