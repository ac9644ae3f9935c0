package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// Metrics are the runtime service's Prometheus collectors.
type Metrics struct {
	rpcDuration *prometheus.HistogramVec
	cniSetup    prometheus.Histogram
	panics      *prometheus.CounterVec
}

// NewMetrics creates unregistered collectors; Register adds them to a registry.
func NewMetrics() *Metrics {
	return &Metrics{
		rpcDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth_runtime",
			Name:      "grpc_request_duration_seconds",
			Help:      "CRI gRPC request latency by method and status code.",
			Buckets:   prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"method", "code"}),
		cniSetup: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "berth_runtime",
			Name:      "cni_setup_duration_seconds",
			Help:      "Time to attach a pod sandbox to its network through CNI.",
			Buckets:   prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		panics: newPanicCounter(),
	}
}

// Register adds the collectors to reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.rpcDuration, m.cniSetup, m.panics} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// UnaryInterceptor records every unary RPC's latency.
func (m *Metrics) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		m.rpcDuration.WithLabelValues(info.FullMethod, status.Code(err).String()).Observe(time.Since(start).Seconds())
		return resp, err
	}
}

// StreamInterceptor records every streaming RPC's duration.
func (m *Metrics) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		m.rpcDuration.WithLabelValues(info.FullMethod, status.Code(err).String()).Observe(time.Since(start).Seconds())
		return err
	}
}
