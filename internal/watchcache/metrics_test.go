package watchcache_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/berth/berth/internal/watchcache"
)

func TestMetricsCountWatchersEventsCutOffsAndRelists(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := watchcache.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watchcache.NewMetrics(reg); err == nil {
		t.Fatal("registering the metrics twice on one registry succeeded")
	}
	c, s := newPodCache(t, func(cfg *watchcache.Config) { cfg.Metrics = m; cfg.WatcherBuffer = 1 })
	slow, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	stopped, err := c.Watch(ctx, watchcache.WatchOptions{ResourceVersion: "0", Namespace: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	stopped.Stop()
	for i := 0; i < 4; i++ {
		createPod(t, s, pod("ns", fmt.Sprintf("p%d", i), "n", nil))
	}
	// A consistent list returns once the cache has dispatched every write.
	if _, _, _, err := list(ctx, c, watchcache.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	drainUntilClosed(t, slow) // cut off: it read nothing while 4 events came
	for name, want := range map[string]float64{
		"berth_watchcache_events_total":           4,
		"berth_watchcache_relists_total":          1,
		"berth_watchcache_watchers":               0,
		"berth_watchcache_watchers_cut_off_total": 1,
	} {
		if got := metricValue(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// metricValue reads the one series of name for the pod prefix.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == podPrefix {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no series %s{prefix=%q}", name, podPrefix)
	return 0
}
