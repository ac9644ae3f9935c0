package server

import (
	"context"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// LoggingInterceptor logs failed RPCs: failures of the runtime itself
// (Internal, Unknown, Unavailable) as warnings, a client's bad requests at
// debug level, so an operator sees what went wrong without a debugger.
func LoggingInterceptor(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err != nil {
			level := slog.LevelDebug
			switch status.Code(err) {
			case codes.Internal, codes.Unknown, codes.Unavailable, codes.DataLoss:
				level = slog.LevelWarn
			}
			log.Log(ctx, level, "CRI request failed", "method", info.FullMethod, "err", err)
		}
		return resp, err
	}
}
