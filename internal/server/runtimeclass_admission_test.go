package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestRuntimeClassAdmission: upstream's RuntimeClass plugin copies a
// class's overhead, node selector and tolerations into each new pod naming
// it, and refuses a pod naming a class that does not exist or declaring an
// overhead no class gives.
func TestRuntimeClassAdmission(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "classy")
	toleration := corev1.Toleration{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	if _, err := s.Admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxed"},
		Handler:    "test-handler",
		Overhead:   &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "yes"}, Tolerations: []corev1.Toleration{toleration}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := s.Admin.CoreV1().Pods("classy")

	classed := testPod("classed")
	classed.Spec.RuntimeClassName = ptr.To("sandboxed")
	pod, err := pods.Create(ctx, classed, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod naming RuntimeClass sandboxed: %v", err)
	}
	if got := pod.Spec.Overhead.Cpu().String(); got != "250m" {
		t.Errorf("pod overhead cpu %q, want the class's 250m", got)
	}
	if pod.Spec.NodeSelector["sandbox"] != "yes" {
		t.Errorf("pod node selector %v, want the class's sandbox=yes", pod.Spec.NodeSelector)
	}
	if !slices.ContainsFunc(pod.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.MatchToleration(&toleration) }) {
		t.Errorf("pod tolerations %v, want the class's %v", pod.Spec.Tolerations, toleration)
	}

	missing := testPod("missing-class")
	missing.Spec.RuntimeClassName = ptr.To("no-such-class")
	if _, err := pods.Create(ctx, missing, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `RuntimeClass "no-such-class" not found`) {
		t.Errorf("pod naming a missing RuntimeClass: %v, want upstream's Forbidden", err)
	}
	overhead := testPod("own-overhead")
	overhead.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	if _, err := pods.Create(ctx, overhead, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "Overhead set without corresponding RuntimeClass") {
		t.Errorf("pod with an overhead and no RuntimeClass: %v, want upstream's Forbidden", err)
	}
}
