package cri

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// Metrics count and time the agent's CRI calls, by operation (the RPC's
// method name: "RunPodSandbox", "PullImage", ...), as the kubelet's
// runtime_operations_* metrics do. They hook into the connection as gRPC
// client interceptors, so every call through a Client is measured without
// wrapping each of the ~40 RPCs by hand.
type Metrics struct {
	operations *prometheus.CounterVec
	errors     *prometheus.CounterVec
	duration   *prometheus.HistogramVec
}

// NewMetrics creates the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "berth_agent", Subsystem: "cri",
			Name: "operations_total",
			Help: "CRI calls made by the agent, by operation (streams count once, when opened).",
		}, []string{"operation"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "berth_agent", Subsystem: "cri",
			Name: "operation_errors_total",
			Help: "CRI calls that failed, by operation and gRPC status code.",
		}, []string{"operation", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "berth_agent", Subsystem: "cri",
			Name:    "operation_duration_seconds",
			Help:    "Latency of unary CRI calls made by the agent, by operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"operation"}),
	}
	for _, c := range []prometheus.Collector{m.operations, m.errors, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register CRI metrics: %w", err)
		}
	}
	return m, nil
}

// dialOptions are the interceptors that feed m.
func (m *Metrics) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(m.unary),
		grpc.WithChainStreamInterceptor(m.stream),
	}
}

func (m *Metrics) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	op := path.Base(method)
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	m.observe(op, err)
	return err
}

// stream counts a stream's opening only: a stream such as
// GetContainerEvents lives as long as the agent, so its duration says
// nothing about the runtime's latency.
func (m *Metrics) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	m.observe(path.Base(method), err)
	return s, err
}

func (m *Metrics) observe(op string, err error) {
	m.operations.WithLabelValues(op).Inc()
	if err != nil {
		m.errors.WithLabelValues(op, status.Code(err).String()).Inc()
	}
}
