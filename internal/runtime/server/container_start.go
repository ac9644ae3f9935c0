package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StartContainer starts a created container and begins watching for its exit.
func (s *Server) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	c, err := s.containers.get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	unlock := s.locks.lock(c.ID)
	defer unlock()
	if c, err = s.containers.get(c.ID); err != nil {
		return nil, err
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %s is %s, not created", c.ID, c.State)
	}
	sb, err := s.sandboxes.get(c.SandboxID)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.NRI.StartContainer(ctx, nriPod(sb), nriContainer(c, nil)); err != nil {
		return nil, status.Errorf(codes.Unknown, "NRI StartContainer: %v", err)
	}
	if err := s.cfg.OCI.Start(ctx, c.ID); err != nil {
		// A container that cannot start has failed for good: record why,
		// as kubelet expects to see it exited with a reason.
		_, _ = s.containers.update(c.ID, func(v *container) {
			v.State = runtimeapi.ContainerState_CONTAINER_EXITED
			v.FinishedAt = time.Now().UnixNano()
			v.ExitCode = 128
			v.Reason = "StartError"
			v.Message = err.Error()
		})
		return nil, status.Errorf(codes.Internal, "start container %s: %v", c.ID, err)
	}
	started, err := s.containers.update(c.ID, func(v *container) {
		v.State = runtimeapi.ContainerState_CONTAINER_RUNNING
		v.StartedAt = time.Now().UnixNano()
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := s.cfg.NRI.PostStartContainer(ctx, nriPod(sb), nriContainer(started, nil)); err != nil {
		s.log.Warn("NRI PostStartContainer", "id", c.ID, "err", err)
	}
	s.publish(c.ID, c.SandboxID, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	s.watchExit(c.ID)
	return &runtimeapi.StartContainerResponse{}, nil
}
