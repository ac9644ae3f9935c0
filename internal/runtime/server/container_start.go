package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/oci"
)

// StartContainer runs a created container: its monitor is started and
// creates and starts it in one `runc run --detach` on the bundle
// CreateContainer wrote; then its exit is watched.
func (s *Server) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (_ *runtimeapi.StartContainerResponse, retErr error) {
	if err := requireID("container", req.GetContainerId()); err != nil {
		return nil, err
	}
	c, err := s.containers.get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	unlock := s.locks.Lock(c.ID)
	defer unlock()
	if c, err = s.containers.get(c.ID); err != nil {
		return nil, err
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %s is %s, not created", c.ID, c.State)
	}
	defer func() {
		if retErr != nil {
			s.recordStartError(c.ID, retErr)
		}
	}()
	sb, err := s.sandboxes.get(c.SandboxID)
	if err != nil {
		return nil, err
	}
	if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %s is not ready", sb.ID)
	}
	if err := s.checkTargetStillRuns(ctx, c); err != nil {
		return nil, err
	}
	if err := s.cfg.NRI.StartContainer(ctx, nriPod(sb), nriContainer(c, nil)); err != nil {
		return nil, status.Errorf(codes.Unknown, "NRI StartContainer: %v", err)
	}
	detach, err := s.attachIDMappedMounts(c, sb)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "start container %s: %v", c.ID, err)
	}
	defer detach()
	// Taken before the process can begin (and end), so it never follows
	// the finish time the monitor records.
	startedAt := time.Now()
	// On failure RunDetached leaves no monitor and no OCI runtime state behind.
	if _, err := s.cfg.OCI.RunDetached(ctx, oci.RunOptions{
		ID: c.ID, SandboxID: c.SandboxID, BundleDir: c.BundleDir, LogPath: c.LogPath,
		Terminal: c.Config.GetTty(), Stdin: c.Config.GetStdin(), StdinOnce: c.Config.GetStdinOnce(),
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "start container %s: %v", c.ID, err)
	}
	started, err := s.containers.updateProcessState(c.ID, func(v *container) {
		v.State = runtimeapi.ContainerState_CONTAINER_RUNNING
		v.StartedAt = startedAt.UnixNano()
	})
	if err != nil {
		// Unrecorded, the process must not run on unseen.
		if derr := s.deleteTask(context.WithoutCancel(ctx), c.ID); derr != nil {
			s.log.Warn("delete container whose start was not recorded", "id", c.ID, "err", derr)
		}
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := s.cfg.NRI.PostStartContainer(ctx, nriPod(sb), nriContainer(started, nil)); err != nil {
		s.log.Warn("NRI PostStartContainer", "id", c.ID, "err", err)
	}
	s.publish(c.ID, c.SandboxID, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	s.watchExit(c.ID)
	return &runtimeapi.StartContainerResponse{}, nil
}

// recordStartError marks a container that could not start as failed for
// good, as containerd does and kubelet expects: exited, code 128, reason
// StartError with the error as message.
func (s *Server) recordStartError(id string, err error) {
	if _, uerr := s.containers.update(id, func(v *container) {
		v.State = runtimeapi.ContainerState_CONTAINER_EXITED
		v.FinishedAt = time.Now().UnixNano()
		v.ExitCode = 128
		v.Reason = "StartError"
		v.Message = status.Convert(err).Message()
	}); uerr != nil {
		s.log.Warn("record start error", "id", id, "err", uerr)
	}
}
