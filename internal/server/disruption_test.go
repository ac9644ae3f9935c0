package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

// Upstream's disruption controller runs in the server: a budget over a
// ReplicationController's pods gets its status from the controller's scale
// and the pods' readiness, and evictions spend what it allows.
func TestDisruptionControllerComputesBudgetStatus(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "pdb")
	if _, err := s.Admin.CoreV1().ReplicationControllers("pdb").Create(ctx, webController(3), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the ReplicationController: %v", err)
	}
	var names []string
	wait.UntilNil(t, time.Minute, "the ReplicationController's 3 pods", func() error {
		names = livePods(ctx, s.Admin)
		if len(names) != 3 {
			return fmt.Errorf("%d live pods", len(names))
		}
		return nil
	})
	for _, name := range names[:2] {
		markReady(ctx, t, s.Admin, name)
	}
	budgets := s.Admin.PolicyV1().PodDisruptionBudgets("pdb")
	if _, err := budgets.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the budget: %v", err)
	}
	budgetStatus := func(expected, desired, current, allowed int32) func() error {
		return func() error {
			pdb, err := budgets.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			st := pdb.Status
			if st.ObservedGeneration != pdb.Generation || st.ExpectedPods != expected || st.DesiredHealthy != desired ||
				st.CurrentHealthy != current || st.DisruptionsAllowed != allowed {
				return fmt.Errorf("status %+v", st)
			}
			return nil
		}
	}
	// maxUnavailable takes the expected count from the controller's scale.
	wait.UntilNil(t, time.Minute, "the budget's status: 3 expected, 2 desired, 2 healthy, none allowed", budgetStatus(3, 2, 2, 0))
	err := s.Admin.PolicyV1().Evictions("pdb").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: names[0], Namespace: "pdb"}})
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evict %s with no disruption allowed: %v, want 429", names[0], err)
	}

	markReady(ctx, t, s.Admin, names[2])
	wait.UntilNil(t, time.Minute, "the budget's status: 3 healthy, one disruption allowed", budgetStatus(3, 2, 3, 1))
	if err := s.Admin.PolicyV1().Evictions("pdb").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: names[0], Namespace: "pdb"}}); err != nil {
		t.Fatalf("evict %s with a disruption allowed: %v", names[0], err)
	}
	err = s.Admin.PolicyV1().Evictions("pdb").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: names[1], Namespace: "pdb"}})
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evict %s once the disruption was spent: %v, want 429", names[1], err)
	}
}

// livePods names the pods labelled app=web in namespace pdb that are not being deleted.
func livePods(ctx context.Context, cs kubernetes.Interface) []string {
	pods, err := cs.CoreV1().Pods("pdb").List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"app": "web"}.String()})
	if err != nil {
		return nil
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// markReady reports the pod Running and Ready, as its agent would.
func markReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	pods := cs.CoreV1().Pods("pdb")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("report pod %s Ready: %v", name, err)
	}
}
