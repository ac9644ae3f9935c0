// Package promscrape reads a /metrics endpoint in tests: its Prometheus
// text parsed into metric families, and one series' value by its labels.
package promscrape

import (
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a scrape: metric families by name.
type Families map[string]*dto.MetricFamily

// Get scrapes url with c.
func Get(c *http.Client, url string) (Families, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s is not Prometheus text: %w", url, err)
	}
	return families, nil
}

// Value is the value of the first series of family name that has every
// label in labels (a counter's or gauge's value, a histogram's sample
// count), and whether there is one.
func (f Families) Value(name string, labels map[string]string) (float64, bool) {
	for _, m := range f[name].GetMetric() {
		if hasLabels(m, labels) {
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			default:
				return m.GetUntyped().GetValue(), true
			}
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}
