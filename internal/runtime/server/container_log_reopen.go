package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ReopenContainerLog asks the monitor to reopen the log file after the
// kubelet rotated it.
func (s *Server) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	c, err := s.containers.get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.FailedPrecondition, "container %s is not running", c.ID)
	}
	if err := s.cfg.OCI.ReopenLog(ctx, c.ID); err != nil {
		return nil, status.Errorf(codes.Internal, "reopen log of %s: %v", c.ID, err)
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}
