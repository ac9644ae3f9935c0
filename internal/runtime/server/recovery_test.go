package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestHandlerPanicAnswersInternalAndServingGoesOn: a panic deep in a CRI
// handler (here in the network dependency the Status RPC consults) reaches
// the client as codes.Internal through the real gRPC server and
// interceptors, is counted, and the next RPC on the same server succeeds.
func TestHandlerPanicAnswersInternalAndServingGoesOn(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const method = "/runtime.v1.RuntimeService/Status"

	h.net.panicReady.Store(true)
	_, err := h.client.Status(ctx, &runtimeapi.StatusRequest{})
	wantCode(t, err, codes.Internal)
	if strings.Contains(err.Error(), "fake network") {
		t.Errorf("the panic's value reached the client: %v", err)
	}

	h.net.panicReady.Store(false)
	if _, err := h.client.Status(ctx, &runtimeapi.StatusRequest{}); err != nil {
		t.Fatalf("Status after a recovered panic: %v", err)
	}
	if _, err := h.client.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		t.Fatalf("Version after a recovered panic: %v", err)
	}
	if got := gatheredPanics(t, h.registry, method); got != 1 {
		t.Errorf("berth_runtime_grpc_handler_panics_total{method=%q} = %v, want 1", method, got)
	}
}

// TestStreamHandlerPanicIsRecovered: the stream interceptor answers a
// panicking streaming handler with Internal and logs method and stack.
func TestStreamHandlerPanicIsRecovered(t *testing.T) {
	var buf strings.Builder
	m := NewMetrics()
	intercept := m.recoverStream(slog.New(slog.NewTextHandler(&buf, nil)))
	info := &grpc.StreamServerInfo{FullMethod: "/runtime.v1.RuntimeService/GetContainerEvents", IsServerStream: true}
	err := intercept(nil, fakeServerStream{ctx: context.Background()}, info, func(any, grpc.ServerStream) error {
		var events map[string]int
		//lint:ignore SA5000 the runtime panic is the point
		events["x"]++ // a nil-map write: a real runtime panic, not a panic() call
		return nil
	})
	wantCode(t, err, codes.Internal)
	log := buf.String()
	for _, want := range []string{"level=ERROR", info.FullMethod, "assignment to entry in nil map", "recovery_test.go"} {
		if !strings.Contains(log, want) {
			t.Errorf("panic log lacks %q:\n%s", want, log)
		}
	}
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	if got := gatheredPanics(t, reg, info.FullMethod); got != 1 {
		t.Errorf("panic counter = %v, want 1", got)
	}
	// A handler that returns normally passes through untouched.
	if err := intercept(nil, fakeServerStream{ctx: context.Background()}, info, func(any, grpc.ServerStream) error { return nil }); err != nil {
		t.Errorf("a handler without panic: %v", err)
	}
}

type fakeServerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (f fakeServerStream) Context() context.Context { return f.ctx }

// gatheredPanics reads the panic counter of method as the registry exports it.
func gatheredPanics(t *testing.T, reg prometheus.Gatherer, method string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "berth_runtime_grpc_handler_panics_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabel(m, "method", method) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
