package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StopPodSandbox stops the pod's containers and pause process and gives
// back its network and pinned namespaces. Stopping a sandbox that is gone or stopped is no error.
func (s *Server) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	if err := requireID("sandbox", req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	sb, err := s.sandboxes.get(req.GetPodSandboxId())
	if status.Code(err) == codes.NotFound {
		return &runtimeapi.StopPodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.stopSandbox(ctx, sb); err != nil && !removedMeanwhile(err) {
		return nil, err
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// removedMeanwhile reports an error that only says a concurrent call
// (another remover: the agent's pod worker and its garbage collector may
// race) finished the job first, which CRI's idempotent stop and remove
// must not report.
func removedMeanwhile(err error) bool { return status.Code(err) == codes.NotFound }

func (s *Server) stopSandbox(ctx context.Context, sb sandbox) error {
	unlock := s.locks.Lock(sb.ID)
	defer unlock()
	// Not ready from the first step on: a half-done stop is not a usable
	// sandbox, and the pause watcher then knows this exit was asked for.
	cur, err := s.sandboxes.update(sb.ID, func(v *sandbox) {
		v.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	})
	if err != nil {
		return err
	}
	for _, c := range s.containersOf(sb.ID) {
		if err := s.stopContainer(ctx, c.ID, 0); err != nil && !removedMeanwhile(err) {
			return err
		}
	}
	if cur.Stopped {
		// An earlier stop completed every step below (kubelet stops a pod's
		// sandbox before it removes it): running them again would only exec
		// each CNI plugin and the OCI runtime once more, as containerd skips
		// a teardown whose namespace is already gone.
		return nil
	}
	if sb.hasPause() {
		if _, err := s.stopTask(ctx, sb.ID, 0); err != nil {
			return status.Errorf(codes.Internal, "stop pause process: %v", err)
		}
	}
	if sb.NetNS != "" {
		if err := s.cfg.Network.Teardown(ctx, podNetwork(&sb)); err != nil {
			return status.Errorf(codes.Internal, "tear down pod network: %v", err)
		}
	}
	if err := unpinAll(sb.NetNS, sb.UTSNS, sb.IPCNS, sb.UserNS); err != nil {
		return status.Errorf(codes.Internal, "%v", err)
	}
	var already bool
	if _, err := s.sandboxes.update(sb.ID, func(v *sandbox) { already, v.Stopped = v.Stopped, true }); err != nil {
		return err
	}
	if !already {
		if err := s.cfg.NRI.StopPodSandbox(ctx, nriPod(sb)); err != nil {
			s.log.Warn("NRI StopPodSandbox", "id", sb.ID, "err", err)
		}
	}
	s.log.Info("sandbox stopped", "id", sb.ID)
	return nil
}

// containersOf lists the containers that belong to a sandbox.
func (s *Server) containersOf(sandboxID string) []container {
	var out []container
	for _, c := range s.containers.list() {
		if c.SandboxID == sandboxID {
			out = append(out, c)
		}
	}
	return out
}
