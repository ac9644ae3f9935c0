package server

import (
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/oci"
)

// watchExit starts the goroutine that records a running container's exit.
func (s *Server) watchExit(id string) {
	s.watch(id, func(st oci.State) { s.recordExit(id, st) })
}

// watchSandboxExit marks a sandbox not ready when its pause process dies.
func (s *Server) watchSandboxExit(id string) {
	s.watch(id, func(st oci.State) {
		var was runtimeapi.PodSandboxState
		if _, err := s.sandboxes.update(id, func(v *sandbox) {
			was = v.State
			v.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		}); err == nil && was == runtimeapi.PodSandboxState_SANDBOX_READY {
			s.log.Warn("sandbox's pause process exited; sandbox not ready", "id", id, "code", st.ExitCode)
		}
	})
}

// watch calls onExit when the OCI runtime reports that id has exited. The
// server owns the goroutine and stops it on Close; an exit while no server
// runs is found by the next server's recovery instead.
func (s *Server) watch(id string, onExit func(oci.State)) {
	s.exitGroup.Add(1)
	go func() {
		defer s.exitGroup.Done()
		st, err := s.cfg.OCI.Wait(s.exitCtx, id)
		if err != nil {
			if s.exitCtx.Err() == nil && !isNotFound(err) {
				s.log.Warn("waiting for exit", "id", id, "err", err)
			}
			return
		}
		onExit(st)
	}()
}

// recordExit stores a container's exit once, with the reason kubelet shows.
func (s *Server) recordExit(id string, st oci.State) {
	var already bool
	c, err := s.containers.updateProcessState(id, func(v *container) {
		if v.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			already = true
			return
		}
		if st.Status != oci.StatusStopped {
			// Its monitor is gone: the real exit can never be known.
			markUnknownExit(v, brokenMessage(st))
			v.FinishedAt = time.Now().UnixNano()
			return
		}
		markExited(v, st)
	})
	if err != nil || already {
		return
	}
	s.log.Info("container exited", "id", id, "code", st.ExitCode, "reason", c.Reason)
	s.nriNotify(s.exitCtx, "StopContainer", c, s.cfg.NRI.StopContainer)
	s.publish(id, c.SandboxID, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
}

func exitReason(st oci.State) string {
	switch {
	case st.OOMKilled:
		return "OOMKilled"
	case st.ExitCode == 0:
		return "Completed"
	default:
		return "Error"
	}
}

// publish tells GetContainerEvents subscribers about a lifecycle change.
func (s *Server) publish(containerID, sandboxID string, typ runtimeapi.ContainerEventType) {
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId: containerID, ContainerEventType: typ, CreatedAt: time.Now().UnixNano(),
	}
	if sb, err := s.sandboxes.get(sandboxID); err == nil {
		ev.PodSandboxStatus = sandboxStatus(sb)
	}
	if c, err := s.containers.get(containerID); err == nil {
		ev.ContainersStatuses = []*runtimeapi.ContainerStatus{containerStatus(c)}
	}
	s.events.publish(ev)
}

// exitedNow is the state recorded for a container whose real exit status
// could not be observed.
func exitedNow(code int32) oci.State {
	return oci.State{Status: oci.StatusStopped, ExitCode: code, FinishedAt: time.Now()}
}

func brokenMessage(st oci.State) string {
	if st.Broken != "" {
		return st.Broken
	}
	return fmt.Sprintf("the container's state is %s: its monitor is gone", st.Status)
}
