package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Exec returns a streaming-server URL at which the client runs the command.
func (s *Server) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	if len(req.GetCmd()) == 0 {
		return nil, invalid("cmd is required")
	}
	if !req.GetStdin() && !req.GetStdout() && !req.GetStderr() {
		return nil, invalid("one of stdin, stdout and stderr is required")
	}
	if req.GetTty() && req.GetStderr() {
		return nil, invalid("tty and stderr cannot both be true")
	}
	c, err := s.runningContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if s.cfg.Streaming == nil {
		return nil, status.Error(codes.Unavailable, "the streaming server is not running")
	}
	req.ContainerId = c.ID
	return s.cfg.Streaming.GetExec(req)
}

// runningContainer finds a container and insists that it runs.
func (s *Server) runningContainer(id string) (container, error) {
	c, err := s.containers.get(id)
	if err != nil {
		return c, err
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return c, status.Errorf(codes.FailedPrecondition, "container %s is not running", c.ID)
	}
	return c, nil
}
