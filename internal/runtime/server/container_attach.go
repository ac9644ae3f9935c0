package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Attach returns a streaming-server URL connected to the container's stdio.
func (s *Server) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	if !req.GetStdin() && !req.GetStdout() && !req.GetStderr() {
		return nil, invalid("one of stdin, stdout and stderr is required")
	}
	c, err := s.runningContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if s.cfg.Streaming == nil {
		return nil, status.Error(codes.Unavailable, "the streaming server is not running")
	}
	req.ContainerId = c.ID
	return s.cfg.Streaming.GetAttach(req)
}
