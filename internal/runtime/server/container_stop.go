package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StopContainer sends SIGTERM, waits up to the timeout, then SIGKILL.
// Stopping a container that is gone, stopped or never started is no error.
func (s *Server) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	if req.GetTimeout() < 0 {
		return nil, invalid("timeout must not be negative")
	}
	c, err := s.containers.get(req.GetContainerId())
	if status.Code(err) == codes.NotFound {
		return &runtimeapi.StopContainerResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.stopContainer(ctx, c.ID, time.Duration(req.GetTimeout())*time.Second); err != nil {
		return nil, err
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (s *Server) stopContainer(ctx context.Context, id string, timeout time.Duration) error {
	unlock := s.locks.Lock(id)
	defer unlock()
	c, err := s.containers.get(id)
	if err != nil {
		return err
	}
	switch c.State {
	case runtimeapi.ContainerState_CONTAINER_EXITED,
		// Never started, it has no process, monitor or OCI runtime state to
		// stop, and stays created, as in containerd (stop acts only on a
		// running container) and as kubelet expects.
		runtimeapi.ContainerState_CONTAINER_CREATED:
		return nil
	}
	st, err := s.stopTask(ctx, id, timeout)
	if err != nil {
		return status.Errorf(codes.Internal, "stop container %s: %v", id, err)
	}
	if st.ID == "" { // the OCI runtime no longer knows it: it died unseen
		st = exitedNow(137)
	}
	s.recordExit(id, st)
	return nil
}
