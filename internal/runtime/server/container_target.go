package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/oci"
)

// targetPid is the init process of the container whose PID namespace cfg
// asks to join (PID namespace mode TARGET, which the kubelet sends for an
// ephemeral container with a targetContainerName); 0 when cfg asks for
// another mode. As containerd's CRI plugin, the target must be a running
// container of the same sandbox. Its pid is asked of its monitor, not of
// a record, so it is right after a runtime restart too: the monitor
// outlives the runtime and holds the process.
func (s *Server) targetPid(ctx context.Context, sandboxID string, cfg *ContainerConfig) (int, error) {
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_TARGET {
		return 0, nil
	}
	if ns.GetTargetId() == "" {
		return 0, invalid("PID namespace mode TARGET needs namespace_options.target_id")
	}
	target, err := s.containers.get(ns.GetTargetId())
	if err != nil {
		return 0, status.Errorf(status.Code(err), "invalid target container: %s", status.Convert(err).Message())
	}
	if target.SandboxID != sandboxID {
		return 0, invalid("invalid target container: container %q (sandbox %s) does not belong to sandbox %s", target.ID, target.SandboxID, sandboxID)
	}
	if target.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return 0, notRunning(target.ID, target.State.String())
	}
	st, err := s.cfg.OCI.State(ctx, target.ID)
	if isNotFound(err) {
		return 0, notRunning(target.ID, "gone from the OCI runtime")
	}
	if err != nil {
		return 0, status.Errorf(codes.Internal, "state of target container %s: %v", target.ID, err)
	}
	// The record may not yet say that the process has exited; the
	// monitor knows.
	if st.Status != oci.StatusRunning || st.Pid <= 0 {
		return 0, notRunning(target.ID, string(st.Status))
	}
	return st.Pid, nil
}

func notRunning(id, state string) error {
	return status.Errorf(codes.FailedPrecondition, "invalid target container: container %q is not running - in state %s", id, state)
}

// checkTargetStillRuns is StartContainer's check of a TARGET container's
// target: config.json names the target's process by pid
// (/proc/PID/ns/pid), and a pid freed by an exit since CreateContainer may
// belong to any process by now, whose PID namespace runc would join. A
// running target still has the pid it had at create: a container's init
// never changes while it runs, and a CRI container never runs twice.
func (s *Server) checkTargetStillRuns(ctx context.Context, c container) error {
	_, err := s.targetPid(ctx, c.SandboxID, c.Config)
	return err
}
