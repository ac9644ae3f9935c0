package nodeserver

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/berth/berth/internal/agent/cri"
	testcri "github.com/berth/berth/internal/testkit/cri"
)

// TestMetricsEndpoint serves a registry holding the Go collector and the
// agent's CRI metrics of a client connected to a real runtime (containerd),
// through the real HTTPS server: a log request the server answers through
// CRI moves the ListContainers counter on the next scrape; refused callers
// get no metrics.
func TestMetricsEndpoint(t *testing.T) {
	ctd := testcri.Start(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	criMetrics, err := cri.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	rt, _, err := cri.Dial(t.Context(), ctd.Endpoint, cri.WithMetrics(criMetrics))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s := startTLSServer(t, Config{Runtime: rt.Runtime, Metrics: reg})

	before := scrape(t, s.apiServer(), s.base)
	if _, ok := before["go_goroutines"]; !ok {
		t.Error("no go_goroutines: the registry passed in is not the one served")
	}
	listsBefore := counter(before, "berth_agent_cri_operations_total", "operation", "ListContainers")

	resp, err := s.admin().Get(s.base + "/containerLogs/default/no-such-pod/c")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("logs of a missing container: %d, want 404", resp.StatusCode)
	}
	after := scrape(t, s.admin(), s.base)
	if got := counter(after, "berth_agent_cri_operations_total", "operation", "ListContainers"); got != listsBefore+1 {
		t.Errorf("ListContainers calls %v after one log lookup, want %v", got, listsBefore+1)
	}

	for name, tc := range map[string]struct {
		c    *http.Client
		want int
	}{"node": {s.node(), http.StatusForbidden}, "anonymous": {s.anonymous(), http.StatusUnauthorized}} {
		resp, err := tc.c.Get(s.base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: /metrics %d, want %d", name, resp.StatusCode, tc.want)
		}
	}
}

// scrape reads /metrics in the Prometheus text format.
func scrape(t *testing.T, c *http.Client, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	return families
}

// counter is the value of the series of family name whose label has value
// (0 when there is none yet).
func counter(families map[string]*dto.MetricFamily, name, label, value string) float64 {
	for _, m := range families[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
