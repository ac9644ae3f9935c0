package gc

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count what the collector removed. A nil *Metrics records nothing.
type Metrics struct {
	removedTotal *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{removedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "berth_agent", Subsystem: "gc",
		Name: "removed_total",
		Help: "Objects the agent's garbage collector removed, by kind (container, sandbox, image, log-directory, pod-cgroup).",
	}, []string{"kind"})}
	if err := reg.Register(m.removedTotal); err != nil {
		return nil, fmt.Errorf("register GC metrics: %w", err)
	}
	return m, nil
}

func (m *Metrics) removed(kind string) {
	if m != nil {
		m.removedTotal.WithLabelValues(kind).Inc()
	}
}
