package server

import (
	"context"
	"log/slog"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// GRPCServerOptions are the interceptors every CRI gRPC server of berth
// runtime uses: latency metrics, logging of failures, and, innermost, panic
// recovery, so the metrics and the log see a recovered panic as the Internal
// error it is answered with.
func GRPCServerOptions(log *slog.Logger, m *Metrics) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(m.UnaryInterceptor(), LoggingInterceptor(log), m.recoverUnary(log)),
		grpc.ChainStreamInterceptor(m.StreamInterceptor(), m.recoverStream(log)),
	}
}

// panicMessage is all a client learns; the stack goes to the log only.
const panicMessage = "the runtime hit an internal error handling this request; see the runtime's log"

// recoverUnary turns a handler's panic into codes.Internal: one bad request
// must not take down the daemon and with it every node's view of its pods.
func (m *Metrics) recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				m.recordPanic(ctx, log, info.FullMethod, r)
				resp, err = nil, status.Error(codes.Internal, panicMessage)
			}
		}()
		return handler(ctx, req)
	}
}

// recoverStream is recoverUnary for streaming RPCs.
func (m *Metrics) recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				m.recordPanic(ss.Context(), log, info.FullMethod, r)
				err = status.Error(codes.Internal, panicMessage)
			}
		}()
		return handler(srv, ss)
	}
}

func (m *Metrics) recordPanic(ctx context.Context, log *slog.Logger, method string, r any) {
	m.panics.WithLabelValues(method).Inc()
	log.ErrorContext(ctx, "CRI handler panicked; answered Internal", "method", method, "panic", r, "stack", string(debug.Stack()))
}

func newPanicCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "berth_runtime",
		Name:      "grpc_handler_panics_total",
		Help:      "CRI gRPC handlers that panicked and were answered with codes.Internal, by method.",
	}, []string{"method"})
}
