package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth/berth/internal/runtime/oci"
)

// killGrace bounds how long a SIGKILLed container may take to be reaped
// before its removal is reported as failed.
const killGrace = 10 * time.Second

// isNotFound reports whether the OCI layer says it has no such container.
func isNotFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || status.Code(err) == codes.NotFound
}

// stopTask sends SIGTERM to a running container, waits up to timeout, then
// SIGKILLs every process in it and waits for the exit. The exit state is
// returned; a container that is already gone yields a zero state.
func (s *Server) stopTask(ctx context.Context, id string, timeout time.Duration) (oci.State, error) {
	st, err := s.cfg.OCI.State(ctx, id)
	if isNotFound(err) {
		return oci.State{}, nil
	}
	if err != nil {
		return oci.State{}, fmt.Errorf("state of %s: %w", id, err)
	}
	if st.Status == oci.StatusStopped {
		return st, nil
	}
	if timeout > 0 && st.Status == oci.StatusRunning {
		if err := s.cfg.OCI.Kill(ctx, id, syscall.SIGTERM, false); err != nil && !isNotFound(err) {
			return st, fmt.Errorf("SIGTERM %s: %w", id, err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, timeout)
		st, err = s.cfg.OCI.Wait(waitCtx, id)
		cancel()
		if err == nil {
			return st, nil
		}
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
	}
	if err := s.cfg.OCI.Kill(ctx, id, syscall.SIGKILL, true); err != nil && !isNotFound(err) {
		return st, fmt.Errorf("SIGKILL %s: %w", id, err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, killGrace)
	defer cancel()
	st, err = s.cfg.OCI.Wait(waitCtx, id)
	if err != nil && !isNotFound(err) {
		return st, fmt.Errorf("wait for %s after SIGKILL: %w", id, err)
	}
	return st, nil
}

// deleteTask kills whatever still runs of a container and removes it from
// the OCI runtime and its monitor. A container already gone is no error.
func (s *Server) deleteTask(ctx context.Context, id string) error {
	if _, err := s.stopTask(ctx, id, 0); err != nil {
		return err
	}
	if err := s.cfg.OCI.Delete(ctx, id); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	return nil
}
