package podsecurity

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics"
	psapi "k8s.io/pod-security-admission/api"
	psmetrics "k8s.io/pod-security-admission/metrics"
)

// Metrics is the library's Prometheus recorder (pod_security_evaluations_total,
// pod_security_exemptions_total, pod_security_errors_total), as kube-apiserver
// exports it.
type Metrics struct {
	r *psmetrics.PrometheusRecorder
}

// NewMetrics registers the recorder's series with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	r := psmetrics.NewPrometheusRecorder(psapi.GetAPIVersion())
	var errs []error
	r.MustRegister(func(cs ...metrics.Registerable) {
		for _, c := range cs {
			// Create initializes the lazily built series; nil: no
			// deprecation to apply (they are not deprecated).
			c.Create(nil)
			if err := reg.Register(c); err != nil {
				errs = append(errs, err)
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("pod security metrics: %w", err)
	}
	return &Metrics{r: r}, nil
}

// recorder is m's recorder; for a nil m, one that records nothing.
func (m *Metrics) recorder() psmetrics.Recorder {
	if m == nil {
		return noMetrics{}
	}
	return m.r
}

type noMetrics struct{}

func (noMetrics) RecordEvaluation(psmetrics.Decision, psapi.LevelVersion, psmetrics.Mode, psapi.Attributes) {
}
func (noMetrics) RecordExemption(psapi.Attributes)   {}
func (noMetrics) RecordError(bool, psapi.Attributes) {}
