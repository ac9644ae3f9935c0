package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/nspin"
	"github.com/berth/berth/internal/runtime/oci"
)

// recover rebuilds the in-memory state from the state dir and the OCI
// runtime's view of surviving monitors, after containerd's restart.go: a
// broken object is logged and marked (NOTREADY, or EXITED with reason
// Unknown) or cleaned, and never fails the start.
func (s *Server) recover(ctx context.Context) error {
	states, err := s.cfg.OCI.Recover(ctx)
	if err != nil {
		// Without the OCI view every container would look dead; that is a
		// service-level failure, not one object's.
		return fmt.Errorf("recover OCI containers: %w", err)
	}
	rootfs, err := s.cfg.Images.RecoverRootfs(ctx)
	if err != nil {
		return fmt.Errorf("recover root filesystems: %w", err)
	}
	for id, ferr := range rootfs.Failed {
		s.log.Warn("recovery: root filesystem not restored", "id", id, "err", ferr)
	}
	live := make(map[string]oci.State, len(states))
	for _, st := range states {
		live[st.ID] = st
	}
	sandboxes, err := s.sandboxes.load(s.quarantine)
	if err != nil {
		return err
	}
	containers, err := s.containers.load(s.quarantine)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, sb := range sandboxes {
		known[sb.ID] = true
		s.recoverSandbox(ctx, sb, live)
	}
	for _, c := range containers {
		if !known[c.SandboxID] {
			s.log.Warn("recovery: container of an unknown sandbox removed", "id", c.ID, "sandbox", c.SandboxID)
			s.cleanOrphan(ctx, c.ID)
			_ = os.Remove(filepath.Join(s.containers.dir, c.ID+".json"))
			continue
		}
		known[c.ID] = true
		s.recoverContainer(ctx, c, live)
	}
	s.releaseUnownedRootfs(ctx, rootfs, known, containers)
	for id := range live {
		if !known[id] {
			// Created under a monitor but never recorded: the runtime died
			// in the middle of a create.
			s.log.Warn("recovery: half-created container cleaned", "id", id)
			s.cleanOrphan(ctx, id)
		}
	}
	s.log.Info("state recovered", "sandboxes", len(sandboxes), "containers", len(containers), "monitors", len(states))
	return nil
}

// recoverSandbox restores one sandbox record. One without a pause
// container is ready for as long as its pinned namespaces are there.
func (s *Server) recoverSandbox(ctx context.Context, sb *sandbox, live map[string]oci.State) {
	st, running := live[sb.ID]
	running = running && st.Status == oci.StatusRunning
	switch lost := pinnedNamespacesLost(sb); {
	case sb.State != runtimeapi.PodSandboxState_SANDBOX_READY:
		if !running {
			s.releaseHalfCreatedSandbox(ctx, sb)
		}
	case sb.hasPause() && !running:
		s.log.Warn("recovery: sandbox's pause process is gone; marked not ready", "id", sb.ID)
		sb.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	case lost != "":
		s.log.Warn("recovery: sandbox's pinned namespace is gone; marked not ready", "id", sb.ID, "namespace", lost)
		sb.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	case sb.hasPause():
		defer s.watchSandboxExit(sb.ID)
	}
	if err := s.sandboxes.persist(sb.ID, sb); err != nil {
		s.log.Error("recovery: persist sandbox", "id", sb.ID, "err", err)
	}
	s.sandboxes.restore(sb.ID, sandboxName(sb.Config.GetMetadata()), sb)
}

// releaseHalfCreatedSandbox gives back the network and pinned namespaces
// of a sandbox whose RunPodSandbox never finished (or whose stop did not);
// the record stays, NOTREADY, for the kubelet to remove. The paths are
// derived from the ID, since a crash may come before they were recorded.
func (s *Server) releaseHalfCreatedSandbox(ctx context.Context, sb *sandbox) {
	if err := unpinAll(s.pinPath(nspin.UTS, sb.ID), s.pinPath(nspin.IPC, sb.ID), s.pinPath(nspin.User, sb.ID)); err != nil {
		s.log.Warn("recovery: pinned namespace removal", "id", sb.ID, "err", err)
	}
	nsPath := s.pinPath(nspin.Net, sb.ID)
	if _, err := os.Stat(nsPath); errors.Is(err, os.ErrNotExist) {
		return
	}
	sb.NetNS = nsPath
	if err := s.cfg.Network.Teardown(ctx, podNetwork(sb)); err != nil {
		s.log.Warn("recovery: network teardown of half-created sandbox", "id", sb.ID, "err", err)
	}
	if err := nspin.Unpin(nsPath); err != nil {
		s.log.Warn("recovery: netns removal", "id", sb.ID, "err", err)
	}
}

func (s *Server) recoverContainer(ctx context.Context, c *container, live map[string]oci.State) {
	st, ok := live[c.ID]
	switch c.State {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		switch {
		case ok && st.Status == oci.StatusRunning:
			defer s.watchExit(c.ID)
		case ok && st.Status == oci.StatusStopped:
			markExited(c, st) // exited while the runtime was down
		default:
			s.log.Warn("recovery: running container's monitor is gone", "id", c.ID, "broken", st.Broken)
			markUnknownExit(c, brokenMessage(st))
		}
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		// A created container has no task until StartContainer runs it; one
		// it has (a monitor, or only its state dir) is a start the runtime
		// died in. That start never answered and nobody watched it: what
		// it left is removed and the container reported exited, unknown,
		// as containerd does with a task it finds never started.
		if ok {
			s.log.Warn("recovery: container whose start was cut short cleaned", "id", c.ID, "oci", st.Status, "broken", st.Broken)
			if err := s.deleteTask(ctx, c.ID); err != nil {
				s.log.Warn("recovery: delete task of interrupted start", "id", c.ID, "err", err)
			}
			c.FinishedAt = time.Now().UnixNano()
			markUnknownExit(c, "the runtime stopped while the container was starting")
		}
	}
	if err := s.containers.persist(c.ID, c); err != nil {
		s.log.Error("recovery: persist container", "id", c.ID, "err", err)
	}
	s.containers.restore(c.ID, c.nameKey(), c)
}

func markExited(c *container, st oci.State) {
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.ExitCode = st.ExitCode
	c.FinishedAt = st.FinishedAt.UnixNano()
	if st.FinishedAt.IsZero() {
		c.FinishedAt = time.Now().UnixNano()
	}
	c.Reason = exitReason(st)
}

func markUnknownExit(c *container, why string) {
	c.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.ExitCode = 255
	c.Reason = "Unknown"
	c.Message = why
	if c.FinishedAt == 0 {
		c.FinishedAt = c.StartedAt
	}
}

// releaseUnownedRootfs removes root filesystems (and their image uses) that
// no recovered sandbox, container or image volume owns: left by a crash
// between preparing a rootfs and recording its owner.
func (s *Server) releaseUnownedRootfs(ctx context.Context, rootfs RootfsRecovery, known map[string]bool, containers []*container) {
	owned := maps.Clone(known)
	for _, c := range containers {
		if !known[c.ID] {
			continue // an orphan: its volumes go too
		}
		for _, v := range c.ImageVolumes {
			owned[v] = true
		}
	}
	// Root filesystems with a mount record, and half-made ones without
	// (a crash before it was written), which could not be restored.
	present := map[string]bool{}
	for _, id := range rootfs.InUse {
		present[id] = true
	}
	for id := range rootfs.Failed {
		present[id] = true
	}
	for id := range present {
		if owned[id] {
			continue
		}
		s.log.Warn("recovery: releasing a root filesystem nothing owns", "id", id)
		if err := s.cfg.Images.RemoveRootfs(ctx, id); err != nil {
			s.log.Warn("recovery: release root filesystem", "id", id, "err", err)
		}
	}
}

// cleanOrphan removes a container or pause task nothing refers to.
func (s *Server) cleanOrphan(ctx context.Context, id string) {
	if err := s.deleteTask(ctx, id); err != nil {
		s.log.Warn("recovery: delete orphan", "id", id, "err", err)
	}
	if err := s.cfg.Images.RemoveRootfs(ctx, id); err != nil {
		s.log.Warn("recovery: remove orphan rootfs", "id", id, "err", err)
	}
	_ = os.RemoveAll(s.bundleDir(id))
}

// quarantine renames an undecodable state file aside so it is kept for
// inspection but never read again.
func (s *Server) quarantine(file string, err error) {
	s.log.Error("recovery: corrupt state file set aside", "file", file, "err", err)
	if rerr := os.Rename(file, file+".corrupt"); rerr != nil {
		s.log.Error("recovery: set aside", "file", file, "err", rerr)
	}
}
