package pods

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pod manager's Prometheus figures. A nil *Metrics records
// nothing, so tests and callers without a registry need not build one.
type Metrics struct {
	workers    prometheus.Gauge
	syncs      *prometheus.HistogramVec
	imagePulls *prometheus.HistogramVec
}

// NewMetrics creates the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		workers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "berth_agent", Name: "pod_workers",
			Help: "Pod workers running: one per pod the agent is converging or cleaning up.",
		}),
		syncs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth_agent", Name: "pod_sync_duration_seconds",
			Help:    "Duration of one sync of one pod (observe the runtime, converge, report status), by result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}, []string{"result"}),
		imagePulls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth_agent", Name: "image_pull_duration_seconds",
			Help:    "Duration of image pulls the agent asked the runtime for, by result.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
		}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{m.workers, m.syncs, m.imagePulls} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register pod metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) workerStarted() {
	if m != nil {
		m.workers.Inc()
	}
}

func (m *Metrics) workerStopped() {
	if m != nil {
		m.workers.Dec()
	}
}

func (m *Metrics) synced(took time.Duration, err error) {
	if m != nil {
		m.syncs.WithLabelValues(result(err)).Observe(took.Seconds())
	}
}

func (m *Metrics) pulled(took time.Duration, err error) {
	if m != nil {
		m.imagePulls.WithLabelValues(result(err)).Observe(took.Seconds())
	}
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}
