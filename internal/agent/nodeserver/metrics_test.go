package nodeserver

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/berth/berth/internal/agent/cri"
	testcri "github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/promscrape"
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
	listsBefore, _ := before.Value("berth_agent_cri_operations_total", map[string]string{"operation": "ListContainers"})

	resp, err := s.admin().Get(s.base + "/containerLogs/default/no-such-pod/c")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("logs of a missing container: %d, want 404", resp.StatusCode)
	}
	after := scrape(t, s.admin(), s.base)
	if got, _ := after.Value("berth_agent_cri_operations_total", map[string]string{"operation": "ListContainers"}); got != listsBefore+1 {
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

// scrape reads /metrics.
func scrape(t *testing.T, c *http.Client, base string) promscrape.Families {
	t.Helper()
	families, err := promscrape.Get(c, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return families
}
