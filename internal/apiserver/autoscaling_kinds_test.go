package apiserver

import (
	"bytes"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestAutoscalingKindsAsKubeAPIServer serves HorizontalPodAutoscalers as
// kube-apiserver does: created through v1, stored as v2 at upstream's key,
// read back through v2 with upstream's conversion and defaults (the v1
// target as a CPU utilization metric), validated by upstream's
// strategy, a status subresource that keeps the spec, and kubectl's columns.
func TestAutoscalingKindsAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	v1 := s.client.AutoscalingV1().HorizontalPodAutoscalers("default")
	v2 := s.client.AutoscalingV2().HorizontalPodAutoscalers("default")

	created, err := v1.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    5, TargetCPUUtilizationPercentage: ptr.To[int32](60),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create v1 HPA: %v", err)
	}
	if created.Spec.MinReplicas == nil || *created.Spec.MinReplicas != 1 {
		t.Errorf("v1 minReplicas %v, want upstream's default 1", created.Spec.MinReplicas)
	}
	kv, err := s.store.Get(ctx, "/registry/horizontalpodautoscalers/default/web")
	if err != nil {
		t.Fatalf("kube-apiserver's key: %v", err)
	}
	if !bytes.Contains(kv.Value, []byte("autoscaling/v2")) {
		t.Errorf("stored %q, want autoscaling/v2", kv.Value)
	}
	got, err := v2.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get v2 HPA: %v", err)
	}
	if len(got.Spec.Metrics) != 1 || got.Spec.Metrics[0].Resource == nil || got.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU ||
		got.Spec.Metrics[0].Resource.Target.AverageUtilization == nil || *got.Spec.Metrics[0].Resource.Target.AverageUtilization != 60 {
		t.Errorf("v2 metrics %+v, want the v1 target as a CPU utilization metric of 60", got.Spec.Metrics)
	}
	if got.Spec.MinReplicas == nil || *got.Spec.MinReplicas != 1 || got.Spec.Behavior != nil {
		t.Errorf("v2 minReplicas %v, behavior %+v; want 1 and none, as upstream (behavior is defaulted only when given)", got.Spec.MinReplicas, got.Spec.Behavior)
	}

	_, err = v2.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, MaxReplicas: 0,
		},
	}, metav1.CreateOptions{})
	expectInvalidFields(t, "an HPA with maxReplicas 0", err, "spec.maxReplicas")

	got.Status.CurrentReplicas, got.Spec.MaxReplicas = 3, 9
	updated, err := v2.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil || updated.Status.CurrentReplicas != 3 || updated.Spec.MaxReplicas != 5 {
		t.Fatalf("update status: %v, %+v; want the status set and the spec unchanged", err, updated)
	}

	cols, rows := tableOf(t, s, "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web")
	if cols != "Name Reference Targets MinPods MaxPods Replicas Age" || len(rows) != 1 || rows[0].Cells[1] != "Deployment/web" {
		t.Fatalf("HPA table columns %q rows %+v, want upstream's", cols, rows)
	}
}
