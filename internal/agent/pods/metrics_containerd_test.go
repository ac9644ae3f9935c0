package pods

import (
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMetricsAndPodsFollowTheWork runs a pod and deletes it, and checks
// that the worker gauge, the sync and pull histograms and Pods follow.
func TestMetricsAndPodsFollowTheWork(t *testing.T) {
	h := newHarness(t)
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h.cfg.Metrics = metrics
	h.startAgent()
	wait.Until(h.t, 90*time.Second, "the informer to sync", func() bool { _, synced := h.manager.Pods(); return synced })
	if pods, _ := h.manager.Pods(); len(pods) != 0 {
		t.Fatalf("Pods() = %d pods before any was created", len(pods))
	}

	pod := h.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "counted"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{busybox("c", "sleep", "3600")}}})
	h.waitPod(pod, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	pods, _ := h.manager.Pods()
	if len(pods) != 1 || pods[0].UID != pod.UID {
		t.Fatalf("Pods() = %v, want only %s", pods, pod.UID)
	}
	if got := gaugeValue(t, metrics.workers); got != 1 {
		t.Errorf("pod_workers = %v with one pod, want 1", got)
	}
	if got := histogramCount(t, metrics.imagePulls, "success"); got != 1 {
		t.Errorf("successful image pulls = %d, want 1 (busybox, pulled once)", got)
	}
	if got := histogramCount(t, metrics.syncs, "success"); got == 0 {
		t.Error("no successful pod sync was timed")
	}

	if err := h.client.CoreV1().Pods("default").Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Until(h.t, 90*time.Second, "the pod's worker to stop", func() bool { return gaugeValue(t, metrics.workers) == 0 })
	wait.Until(h.t, 90*time.Second, "Pods() to forget the pod", func() bool { pods, _ := h.manager.Pods(); return len(pods) == 0 })
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func histogramCount(t *testing.T, h *prometheus.HistogramVec, result string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.WithLabelValues(result).(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
