package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

// TestPriorityAdmission: upstream's Priority plugin resolves a new pod's
// priorityClassName into its priority and preemption policy (the system
// classes in any namespace), gives pods
// without a class the global default class (or priority 0 when there is
// none), refuses a class that does not exist, and refuses a second global
// default class.
func TestPriorityAdmission(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "prio")
	waitForDefaultAccount(t, s.Admin.CoreV1().ServiceAccounts(metav1.NamespaceSystem))

	critical := testPod("critical")
	critical.Spec.PriorityClassName = "system-cluster-critical"
	pod, err := s.Admin.CoreV1().Pods(metav1.NamespaceSystem).Create(ctx, critical, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kube-system pod naming system-cluster-critical: %v", err)
	}
	wantPriority(t, pod, "", 2000000000, corev1.PreemptLowerPriority)

	// As upstream since v1.17, the system classes are not limited to
	// kube-system (a ResourceQuota's limitedResources can do that).
	pods := s.Admin.CoreV1().Pods("prio")
	nodeCritical := testPod("node-critical")
	nodeCritical.Spec.PriorityClassName = "system-node-critical"
	pod, err = pods.Create(ctx, nodeCritical, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod naming system-node-critical outside kube-system: %v", err)
	}
	wantPriority(t, pod, "", 2000001000, corev1.PreemptLowerPriority)

	pod, err = pods.Create(ctx, testPod("plain"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod without a class: %v", err)
	}
	wantPriority(t, pod, "", 0, corev1.PreemptLowerPriority)

	unknown := testPod("unknown")
	unknown.Spec.PriorityClassName = "no-such-class"
	if _, err := pods.Create(ctx, unknown, metav1.CreateOptions{}); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "no PriorityClass with name no-such-class was found") {
		t.Errorf("pod naming a missing PriorityClass: %v, want upstream's Forbidden", err)
	}

	createPriorityClass(t, s.Admin, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 500,
		PreemptionPolicy: ptr.To(corev1.PreemptNever)})
	batch := testPod("batch")
	batch.Spec.PriorityClassName = "batch"
	waitUntilAdmitted(t, pods, batch, "the new class batch in the plugin's informer")
	pod, err = pods.Create(ctx, batch, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod naming class batch: %v", err)
	}
	wantPriority(t, pod, "", 500, corev1.PreemptNever)

	createPriorityClass(t, s.Admin, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "everyone"}, Value: 100, GlobalDefault: true})
	wait.Until(t, time.Minute, "the global default class everyone in the plugin's informer", func() bool {
		pod, err := pods.Create(ctx, testPod("defaulted"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && pod.Spec.Priority != nil && *pod.Spec.Priority == 100
	})
	pod, err = pods.Create(ctx, testPod("defaulted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod without a class, with a global default: %v", err)
	}
	wantPriority(t, pod, "everyone", 100, corev1.PreemptLowerPriority)

	second := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "everyone-else"}, Value: 50, GlobalDefault: true}
	if _, err := s.Admin.SchedulingV1().PriorityClasses().Create(ctx, second, metav1.CreateOptions{}); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "PriorityClass everyone is already marked as default. Only one default can exist") {
		t.Errorf("a second global default class: %v, want upstream's Forbidden", err)
	}
}

// wantPriority checks what the Priority plugin resolved for pod; className
// is the class it should name when the plugin chose it (the global
// default), or "" to leave the pod's own name unchecked.
func wantPriority(t *testing.T, pod *corev1.Pod, className string, priority int32, policy corev1.PreemptionPolicy) {
	t.Helper()
	spec := pod.Spec
	if spec.Priority == nil || *spec.Priority != priority {
		t.Errorf("pod %s: priority %v, want %d", pod.Name, ptr.Deref(spec.Priority, -1), priority)
	}
	if spec.PreemptionPolicy == nil || *spec.PreemptionPolicy != policy {
		t.Errorf("pod %s: preemptionPolicy %v, want %s", pod.Name, ptr.Deref(spec.PreemptionPolicy, ""), policy)
	}
	if className != "" && spec.PriorityClassName != className {
		t.Errorf("pod %s: priorityClassName %q, want %q", pod.Name, spec.PriorityClassName, className)
	}
}

func createPriorityClass(t *testing.T, cs kubernetes.Interface, pc *schedulingv1.PriorityClass) {
	t.Helper()
	if _, err := cs.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PriorityClass %s: %v", pc.Name, err)
	}
}

// waitUntilAdmitted dry-runs pod's creation until admission lets it
// through: the plugin reads classes from an informer, which sees a new
// class shortly after its creation.
func waitUntilAdmitted(t *testing.T, pods interface {
	Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error)
}, pod *corev1.Pod, what string) {
	t.Helper()
	wait.Until(t, time.Minute, what, func() bool {
		_, err := pods.Create(context.Background(), pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil
	})
}
