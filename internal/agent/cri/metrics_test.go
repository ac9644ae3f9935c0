package cri_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/cri"
	testcri "github.com/berth/berth/internal/testkit/cri"
)

// TestMetricsCountCallsAndErrorsByOperation dials a real runtime
// (containerd's CRI) with metrics and checks that calls, failures and
// latencies land under the right operation.
func TestMetricsCountCallsAndErrorsByOperation(t *testing.T) {
	ctd := testcri.Start(t)
	reg := prometheus.NewRegistry()
	m, err := cri.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := cri.Dial(t.Context(), ctd.Endpoint, cri.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		if _, err := c.Runtime.ListContainers(t.Context(), &runtimeapi.ListContainersRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Runtime.ContainerStatus(t.Context(), &runtimeapi.ContainerStatusRequest{ContainerId: "no-such-container"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("ContainerStatus of a missing container: %v, want NotFound", err)
	}

	ops := gather(t, reg, "berth_agent_cri_operations_total")
	errs := gather(t, reg, "berth_agent_cri_operation_errors_total")
	durations := gather(t, reg, "berth_agent_cri_operation_duration_seconds")
	for _, tc := range []struct {
		what string
		got  float64
		want float64
	}{
		{"Version calls (Dial's check)", ops["operation=Version"], 1},
		{"ListContainers calls", ops["operation=ListContainers"], 2},
		{"ContainerStatus calls", ops["operation=ContainerStatus"], 1},
		{"ContainerStatus NotFound errors", errs["code=NotFound,operation=ContainerStatus"], 1},
		{"ListContainers errors", errs["code=OK,operation=ListContainers"], 0},
		{"ListContainers latency samples", durations["operation=ListContainers"], 2},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	if n := len(errs); n != 1 {
		t.Errorf("%d error series, want only the NotFound one", n)
	}
}

// gather returns a metric family's values (a histogram's sample count) by
// their labels, "name=value" joined with commas in label-name order.
func gather(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			key := ""
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
