package watchcache

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the watch caches' Prometheus series, labelled by resource
// prefix. Create one per registry and share it between the caches.
type Metrics struct {
	watchers *prometheus.GaugeVec
	events   *prometheus.CounterVec
	cutOffs  *prometheus.CounterVec
	relists  *prometheus.CounterVec
	revision *prometheus.GaugeVec
}

// NewMetrics registers the series on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		watchers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "berth_watchcache_watchers",
			Help: "Watchers currently served from the watch cache."}, []string{"prefix"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_watchcache_events_total",
			Help: "Store events applied to the watch cache."}, []string{"prefix"}),
		cutOffs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_watchcache_watchers_cut_off_total",
			Help: "Watchers closed because they could not keep up (their buffer was full)."}, []string{"prefix"}),
		relists: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_watchcache_relists_total",
			Help: "Full lists of the store the watch cache made (start-up and after a lost watch)."}, []string{"prefix"}),
		revision: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "berth_watchcache_revision",
			Help: "The store revision the watch cache is current to."}, []string{"prefix"}),
	}
	for _, c := range []prometheus.Collector{m.watchers, m.events, m.cutOffs, m.relists, m.revision} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// cacheMetrics are one cache's series; the zero value (no Metrics) records nothing.
type cacheMetrics struct {
	watchers prometheus.Gauge
	events   prometheus.Counter
	cutOffs  prometheus.Counter
	relists  prometheus.Counter
	revision prometheus.Gauge
}

func (m *Metrics) forPrefix(prefix string) cacheMetrics {
	if m == nil {
		return cacheMetrics{}
	}
	return cacheMetrics{
		watchers: m.watchers.WithLabelValues(prefix),
		events:   m.events.WithLabelValues(prefix),
		cutOffs:  m.cutOffs.WithLabelValues(prefix),
		relists:  m.relists.WithLabelValues(prefix),
		revision: m.revision.WithLabelValues(prefix),
	}
}

func addGauge(g prometheus.Gauge, v float64) {
	if g != nil {
		g.Add(v)
	}
}

func setGauge(g prometheus.Gauge, v float64) {
	if g != nil {
		g.Set(v)
	}
}

func addCounter(c prometheus.Counter, v float64) {
	if c != nil {
		c.Add(v)
	}
}
