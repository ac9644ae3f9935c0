package image

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// pullMetrics are the Prometheus figures of image pulls.
type pullMetrics struct {
	bytes    prometheus.Counter
	layers   prometheus.Counter
	duration *prometheus.HistogramVec
}

func newPullMetrics(reg prometheus.Registerer) (*pullMetrics, error) {
	m := &pullMetrics{
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "image",
			Name: "pull_bytes_total",
			Help: "Bytes of image content downloaded from registries.",
		}),
		layers: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "berth", Subsystem: "image",
			Name: "pull_layers_total",
			Help: "Layers downloaded from registries (layers already present are not counted).",
		}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth", Subsystem: "image",
			Name:    "pull_duration_seconds",
			Help:    "Duration of PullImage, by result.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"result"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.bytes, m.layers, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("image: register metrics: %w", err)
		}
	}
	return m, nil
}
