package agent

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/berth/berth/internal/agent/cri"
	"github.com/berth/berth/internal/agent/gc"
	"github.com/berth/berth/internal/agent/pods"
)

// metrics is the agent's own Prometheus registry (never the global one),
// which the node server exposes on /metrics, and the collectors each part
// records into.
type metrics struct {
	registry *prometheus.Registry
	cri      *cri.Metrics
	pods     *pods.Metrics
	gc       *gc.Metrics
}

func newMetrics() (*metrics, error) {
	m := &metrics{registry: prometheus.NewRegistry()}
	if err := m.registry.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("register Go metrics: %w", err)
	}
	if err := m.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("register process metrics: %w", err)
	}
	var err error
	if m.cri, err = cri.NewMetrics(m.registry); err != nil {
		return nil, err
	}
	if m.pods, err = pods.NewMetrics(m.registry); err != nil {
		return nil, err
	}
	if m.gc, err = gc.NewMetrics(m.registry); err != nil {
		return nil, err
	}
	return m, nil
}
