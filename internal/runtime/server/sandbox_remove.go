package server

import (
	"context"
	"fmt"
	"os"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemovePodSandbox force-stops the sandbox, removes its containers and
// everything it holds on the host. Removing a sandbox that is gone is no error.
func (s *Server) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	if err := requireID("sandbox", req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	sb, err := s.sandboxes.get(req.GetPodSandboxId())
	if status.Code(err) == codes.NotFound {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.stopSandbox(ctx, sb); err != nil {
		if removedMeanwhile(err) {
			return &runtimeapi.RemovePodSandboxResponse{}, nil
		}
		return nil, err
	}
	unlock := s.locks.Lock(sb.ID)
	defer unlock()
	if _, err := s.sandboxes.get(sb.ID); removedMeanwhile(err) {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	for _, c := range s.containersOf(sb.ID) {
		if err := s.removeContainer(ctx, c.ID); err != nil {
			return nil, err
		}
	}
	if err := s.removeSandboxResources(ctx, sb); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := s.sandboxes.remove(sb.ID, sandboxName(sb.Config.GetMetadata())); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := s.cfg.NRI.RemovePodSandbox(ctx, nriPod(sb)); err != nil {
		s.log.Warn("NRI RemovePodSandbox", "id", sb.ID, "err", err)
	}
	s.log.Info("sandbox removed", "id", sb.ID)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// removeSandboxResources deletes the pause process (if any) with its
// rootfs and bundle, and the sandbox's files; each step tolerates what is
// already gone.
func (s *Server) removeSandboxResources(ctx context.Context, sb sandbox) error {
	if sb.hasPause() {
		if err := s.removePause(ctx, sb.ID); err != nil {
			return err
		}
	}
	return removeSandboxFiles(sb.Dir)
}

func (s *Server) removePause(ctx context.Context, id string) error {
	if err := s.deleteTask(ctx, id); err != nil {
		return err
	}
	if err := s.cfg.Images.RemoveRootfs(ctx, id); err != nil {
		return fmt.Errorf("remove pause rootfs: %w", err)
	}
	if err := os.RemoveAll(s.bundleDir(id)); err != nil {
		return fmt.Errorf("remove pause bundle: %w", err)
	}
	return nil
}
