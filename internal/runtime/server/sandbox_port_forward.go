package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PortForward returns a streaming-server URL that forwards to ports on the
// pod's localhost.
func (s *Server) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if err := requireID("sandbox", req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	for _, p := range req.GetPort() {
		if p <= 0 || p > 65535 {
			return nil, invalid("port %d out of range", p)
		}
	}
	sb, err := s.sandboxes.get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %s is not ready", sb.ID)
	}
	if s.cfg.Streaming == nil {
		return nil, status.Error(codes.Unavailable, "the streaming server is not running")
	}
	req.PodSandboxId = sb.ID
	return s.cfg.Streaming.GetPortForward(req)
}
