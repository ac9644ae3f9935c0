package apiserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// createPodIn creates a pod labelled app=web in phase, Ready or not,
// as the test server has no agent to run them.
func createPodIn(ctx context.Context, t *testing.T, client kubernetes.Interface, name string, phase corev1.PodPhase, ready bool) *corev1.Pod {
	t.Helper()
	pods := client.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	readiness := corev1.ConditionFalse
	if ready {
		readiness = corev1.ConditionTrue
	}
	pod.Status.Phase = phase
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: readiness}}
	if pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pod %s status: %v", name, err)
	}
	return pod
}

// setBudgetStatus writes what the disruption controller would have.
func setBudgetStatus(ctx context.Context, t *testing.T, client kubernetes.Interface, name string, allowed, current, desired int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	budgets := client.PolicyV1().PodDisruptionBudgets("default")
	pdb, err := budgets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: current, DesiredHealthy: desired, ExpectedPods: current}
	if pdb, err = budgets.UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("budget %s status: %v", name, err)
	}
	return pdb
}

func evict(ctx context.Context, client kubernetes.Interface, name string, dryRun ...string) error {
	return client.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{DryRun: dryRun}})
}

// TestEvictionHonoursDisruptionBudget follows kube-apiserver's eviction:
// a budget allowing no disruption refuses with 429 and its
// DisruptionBudget cause; a dry run spends nothing; an allowed eviction
// records the pod in the budget's status and deletes it.
func TestEvictionHonoursDisruptionBudget(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	budgets := s.client.PolicyV1().PodDisruptionBudgets("default")
	createPodIn(ctx, t, s.client, "web-1", corev1.PodRunning, true)
	if _, err := budgets.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The controller has not observed the budget yet. Raw: client-go
	// would retry this 429 as its Retry-After says.
	code, processing := rawRequest(t, s, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", "application/json",
		[]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-1","namespace":"default"}}`))
	if code != 429 || processing.Details == nil || len(processing.Details.Causes) != 1 ||
		processing.Details.Causes[0].Message != "The disruption budget web is still being processed by the server." {
		t.Fatalf("evict before the budget's status: %d %+v, want 429 still being processed", code, processing)
	}
	setBudgetStatus(ctx, t, s.client, "web", 0, 1, 1)
	err := evict(ctx, s.client, "web-1")
	var status apierrors.APIStatus
	if !apierrors.IsTooManyRequests(err) || !asStatus(err, &status) || len(status.Status().Details.Causes) != 1 {
		t.Fatalf("evict with no disruption allowed: %v, want 429 with one cause", err)
	}
	cause := status.Status().Details.Causes[0]
	if cause.Type != policyv1.DisruptionBudgetCause || cause.Message != "The disruption budget web needs 1 healthy pods and has 1 currently" ||
		status.Status().Message != "Cannot evict pod as it would violate the pod's disruption budget." {
		t.Fatalf("refusal %+v, want upstream's message and DisruptionBudget cause", status.Status())
	}

	setBudgetStatus(ctx, t, s.client, "web", 1, 2, 1)
	if err := evict(ctx, s.client, "web-1", metav1.DryRunAll); err != nil {
		t.Fatalf("dry-run evict: %v", err)
	}
	if pdb, _ := budgets.Get(ctx, "web", metav1.GetOptions{}); pdb.Status.DisruptionsAllowed != 1 || len(pdb.Status.DisruptedPods) != 0 {
		t.Fatalf("after a dry run the budget is %+v, want it unspent", pdb.Status)
	}
	if _, err := s.client.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod after a dry run: %v", err)
	}

	if err := evict(ctx, s.client, "web-1"); err != nil {
		t.Fatalf("evict with a disruption allowed: %v", err)
	}
	pdb, err := budgets.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || pdb.Status.DisruptionsAllowed != 0 || !disrupted(pdb, "web-1") {
		t.Fatalf("budget after the eviction: %+v %v, want no disruption left and web-1 disrupted", pdb.Status, err)
	}
	if _, err := s.client.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("evicted pod: %v, want NotFound", err)
	}
}

// TestEvictionIgnoresBudgetWhereUpstreamDoes: pending and terminal pods
// go whatever the budget; an unready pod goes under AlwaysAllow; a pod
// under two budgets is a 500.
func TestEvictionIgnoresBudgetWhereUpstreamDoes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	budgets := s.client.PolicyV1().PodDisruptionBudgets("default")
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	if _, err := budgets.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)), Selector: selector,
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setBudgetStatus(ctx, t, s.client, "web", 0, 1, 1)
	for _, pod := range []struct {
		name  string
		phase corev1.PodPhase
		ready bool
	}{{"pending", corev1.PodPending, false}, {"done", corev1.PodSucceeded, false}, {"unready", corev1.PodRunning, false}} {
		createPodIn(ctx, t, s.client, pod.name, pod.phase, pod.ready)
		if err := evict(ctx, s.client, pod.name); err != nil {
			t.Errorf("evict %s pod: %v, want it deleted despite the budget", pod.name, err)
		}
	}
	createPodIn(ctx, t, s.client, "ready", corev1.PodRunning, true)
	if err := evict(ctx, s.client, "ready"); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evict a ready pod: %v, want 429", err)
	}

	if _, err := budgets.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "second"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(0)), Selector: selector}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := evict(ctx, s.client, "ready")
	if !apierrors.IsInternalError(err) && !hasCode(err, 500) {
		t.Fatalf("evict a pod under two budgets: %v, want 500", err)
	}
}

func disrupted(pdb *policyv1.PodDisruptionBudget, pod string) bool {
	at, ok := pdb.Status.DisruptedPods[pod]
	return ok && !at.IsZero()
}

func asStatus(err error, out *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	*out = s
	return ok
}

func hasCode(err error, code int32) bool {
	s, ok := err.(apierrors.APIStatus)
	return ok && s.Status().Code == code
}
