package server

import (
	"context"
	"fmt"
	"os"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemoveContainer force-removes a container, running or not. Removing a
// container that is gone is no error. Its log file is left for the kubelet.
func (s *Server) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	c, err := s.containers.get(req.GetContainerId())
	if status.Code(err) == codes.NotFound {
		return &runtimeapi.RemoveContainerResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.removeContainer(ctx, c.ID); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (s *Server) removeContainer(ctx context.Context, id string) error {
	unlock := s.locks.Lock(id)
	defer unlock()
	c, err := s.containers.get(id)
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.removeContainerResources(ctx, c); err != nil {
		return status.Errorf(codes.Internal, "remove container %s: %v", id, err)
	}
	if err := s.containers.remove(id, c.nameKey()); err != nil {
		return status.Errorf(codes.Internal, "%v", err)
	}
	s.publish(id, c.SandboxID, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	s.nriNotify(ctx, "RemoveContainer", c, s.cfg.NRI.RemoveContainer)
	return nil
}

func (s *Server) removeContainerResources(ctx context.Context, c container) error {
	// A container never started has no task: its start is what creates one.
	if c.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		if err := s.deleteTask(ctx, c.ID); err != nil {
			return err
		}
	}
	if err := s.cfg.Images.RemoveRootfs(ctx, c.ID); err != nil {
		return fmt.Errorf("remove rootfs: %w", err)
	}
	if err := s.removeImageVolumes(ctx, c); err != nil {
		return err
	}
	if err := os.RemoveAll(c.BundleDir); err != nil {
		return fmt.Errorf("remove bundle: %w", err)
	}
	return nil
}
