package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

// TestHorizontalPodAutoscalerScalesByPodMetrics runs upstream's horizontal
// pod autoscaler in the server: without a metrics API the autoscaler says
// it cannot read its metric (ScalingActive False, FailedGetResourceMetric);
// once an extension API server serves metrics.k8s.io behind the
// aggregator, reporting a Deployment's pod at twice its CPU request
// against a 50% target, the autoscaler scales the Deployment to its
// maximum through the scale subresource and says so in its status.
func TestHorizontalPodAutoscalerScalesByPodMetrics(t *testing.T) {
	t.Parallel()
	srv := startServiceServer(t)
	cs := srv.Admin
	ctx := context.Background()
	labels := map[string]string{"app": "busy"}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "busy"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	markPodsRunning(t, cs, "app=busy", 1)
	if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "busy"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "busy"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilCtx(t, time.Minute, "the autoscaler to say it cannot get its metric", func(ctx context.Context) error {
		return hpaCondition(ctx, cs, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric")
	})

	aggregate(t, srv.RESTConfig(t), "metrics.k8s.io", "v1beta1", podMetrics(cs, resource.MustParse("200m")))
	wait.UntilCtx(t, 2*time.Minute, "the autoscaler to scale the Deployment to 4", func(ctx context.Context) error {
		deploy, err := cs.AppsV1().Deployments("default").Get(ctx, "busy", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := ptr.Deref(deploy.Spec.Replicas, 0); got != 4 {
			return fmt.Errorf("replicas %d", got)
		}
		return nil
	})
	wait.UntilCtx(t, time.Minute, "the autoscaler's status to show the scale-up", func(ctx context.Context) error {
		hpa, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "busy", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if hpa.Status.DesiredReplicas != 4 || hpa.Status.LastScaleTime == nil || len(hpa.Status.CurrentMetrics) != 1 ||
			ptr.Deref(hpa.Status.CurrentMetrics[0].Resource.Current.AverageUtilization, 0) != 200 {
			return fmt.Errorf("status %+v", hpa.Status)
		}
		return hpaCondition(ctx, cs, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
	})
}

func hpaCondition(ctx context.Context, cs kubernetes.Interface, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason string) error {
	hpa, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "busy", metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range hpa.Status.Conditions {
		if c.Type == typ && c.Status == status && c.Reason == reason {
			return nil
		}
	}
	return fmt.Errorf("conditions %+v, want %s %s %s", hpa.Status.Conditions, typ, status, reason)
}

// markPodsRunning waits for n pods matching selector and reports them
// running and ready for ten minutes, as an agent would have: the
// autoscaler ignores the CPU of pods that started or became ready lately.
func markPodsRunning(t *testing.T, cs kubernetes.Interface, selector string, n int) {
	t.Helper()
	long := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	wait.UntilCtx(t, time.Minute, fmt.Sprintf("%d pods %s running", n, selector), func(ctx context.Context) error {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(pods.Items) != n {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		for _, pod := range pods.Items {
			if pod.Status.Phase == corev1.PodRunning {
				continue
			}
			pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &long,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: long}}}
			if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, &pod, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
}

// podMetrics is a metrics server for metrics.k8s.io/v1beta1: every pod
// the label selector picks uses cpu in each of its containers.
func podMetrics(cs kubernetes.Interface, cpu resource.Quantity) http.Handler {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: "metrics.k8s.io/v1beta1", Version: "v1beta1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/apis", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "metrics.k8s.io", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}})
	})
	mux.HandleFunc("/apis/metrics.k8s.io/v1beta1", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: gv.GroupVersion,
			APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: []string{"get", "list"}}}})
	})
	mux.HandleFunc("/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods", func(w http.ResponseWriter, r *http.Request) {
		pods, err := cs.CoreV1().Pods(r.PathValue("namespace")).List(r.Context(), metav1.ListOptions{LabelSelector: r.URL.Query().Get("labelSelector")})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		list := metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: gv.GroupVersion}}
		for _, pod := range pods.Items {
			m := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels},
				Timestamp: metav1.Now(), Window: metav1.Duration{Duration: 30 * time.Second}}
			for _, c := range pod.Spec.Containers {
				m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: corev1.ResourceList{corev1.ResourceCPU: cpu}})
			}
			list.Items = append(list.Items, m)
		}
		writeJSON(w, list)
	})
	return mux
}
