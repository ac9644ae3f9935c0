package oci

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	gorunc "github.com/containerd/go-runc"

	"github.com/berth/berth/internal/runtime/monitor"
)

// State combines the exit file, the monitor's answer and, for containers
// whose monitor is gone, runc's own state.
func (r *Runc) State(ctx context.Context, id string) (State, error) {
	dir, err := r.existingDir(id)
	if err != nil {
		return State{}, err
	}
	return r.state(ctx, id, dir)
}

func (r *Runc) state(ctx context.Context, id, dir string) (State, error) {
	if st, ok, err := exitedState(id, dir); ok || err != nil {
		return st, err
	}
	if r.monitorAlive(dir) {
		resp, err := monitor.Call(ctx, dir, monitor.Request{Op: monitor.OpState})
		if err == nil {
			return stateFromResponse(id, dir, resp), nil
		}
		if !errors.Is(err, monitor.ErrGone) {
			return State{}, fmt.Errorf("container %s: %w", id, err)
		}
	}
	// The monitor may have exited just now, after recording the exit.
	if st, ok, err := exitedState(id, dir); ok || err != nil {
		return st, err
	}
	return State{ID: id, Status: StatusUnknown, StartedAt: monitor.ReadStarted(dir), Broken: r.brokenReason(ctx, id, dir)}, nil
}

// exitedState reads the exit file; ok is false while there is none.
func exitedState(id, dir string) (State, bool, error) {
	exit, err := monitor.ReadExit(dir)
	if errors.Is(err, os.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("container %s: %w", id, err)
	}
	return State{
		ID: id, Status: StatusStopped, ExitCode: exit.ExitCode,
		StartedAt: monitor.ReadStarted(dir), FinishedAt: exit.FinishedAt, OOMKilled: exit.OOMKilled,
	}, true, nil
}

func stateFromResponse(id, dir string, resp monitor.Response) State {
	st := State{ID: id, Pid: resp.Pid, StartedAt: resp.StartedAt}
	switch resp.Status {
	case "created":
		st.Status = StatusCreated
	case "running":
		st.Status = StatusRunning
	case "stopped":
		st.Status = StatusStopped
		st.Pid = 0
		if resp.Exit != nil {
			st.ExitCode, st.FinishedAt, st.OOMKilled = resp.Exit.ExitCode, resp.Exit.FinishedAt, resp.Exit.OOMKilled
		}
	default:
		st.Status = StatusUnknown
	}
	if st.StartedAt.IsZero() {
		st.StartedAt = monitor.ReadStarted(dir)
	}
	return st
}

// monitorAlive checks the recorded monitor process, PID and start time
// both: a PID reused by an unrelated process is not the monitor.
func (r *Runc) monitorAlive(dir string) bool {
	proc, err := monitor.ReadProcess(filepath.Join(dir, monitor.PidFile))
	return err == nil && proc.Alive()
}

// brokenReason says why a container without a live monitor and without an
// exit record cannot be managed.
func (r *Runc) brokenReason(ctx context.Context, id, dir string) string {
	if _, err := os.Stat(filepath.Join(dir, monitor.PidFile)); errors.Is(err, os.ErrNotExist) {
		return "half-created: no monitor was recorded"
	}
	if p, err := pauseOf(dir); err != nil || p != nil {
		return "the pause process's monitor is gone"
	}
	c, err := r.runc.State(ctx, id)
	if err != nil {
		return "monitor gone and the OCI runtime has no such container"
	}
	return fmt.Sprintf("monitor gone while the OCI runtime has the container %s", c.Status)
}

// Kill signals the container; a container that has exited is left alone.
func (r *Runc) Kill(ctx context.Context, id string, sig syscall.Signal, all bool) error {
	dir, err := r.existingDir(id)
	if err != nil {
		return err
	}
	if _, ok, _ := exitedState(id, dir); ok {
		return nil
	}
	p, err := pauseOf(dir)
	if err != nil {
		return fmt.Errorf("kill container %s: %w", id, err)
	}
	// A pause process is its PID namespace's init: when it dies, the kernel
	// kills every process left in the namespace, so "all" needs nothing more.
	if p != nil {
		err = r.signalPause(ctx, dir, p, sig)
	} else {
		err = r.runc.Kill(ctx, id, int(sig), &gorunc.KillOpts{All: all})
	}
	if err != nil {
		if _, ok, _ := exitedState(id, dir); ok {
			return nil // it exited meanwhile
		}
		return fmt.Errorf("kill container %s: %w", id, err)
	}
	return nil
}

// Wait blocks on the monitor's wait call (no polling) until the container
// has exited, then reads the exit record.
func (r *Runc) Wait(ctx context.Context, id string) (State, error) {
	dir, err := r.existingDir(id)
	if err != nil {
		return State{}, err
	}
	if st, ok, err := exitedState(id, dir); ok || err != nil {
		return st, err
	}
	if r.monitorAlive(dir) {
		resp, err := monitor.Call(ctx, dir, monitor.Request{Op: monitor.OpWait})
		if err == nil && resp.Exit != nil {
			return stateFromResponse(id, dir, resp), nil
		}
		if ctx.Err() != nil {
			return State{}, ctx.Err()
		}
	}
	return r.state(ctx, id, dir)
}

// deleteTimeout bounds waiting for a monitor to exit after its container
// was deleted.
const deleteTimeout = 10 * time.Second

// Delete removes the container from runc (killing it if it still runs),
// makes sure its monitor has gone and removes its state.
func (r *Runc) Delete(ctx context.Context, id string) error {
	dir, err := r.existingDir(id)
	if err != nil {
		return err
	}
	p, err := pauseOf(dir)
	if err != nil {
		return fmt.Errorf("delete container %s: %w", id, err)
	}
	if p != nil {
		err = r.deletePause(ctx, dir, p)
	} else {
		err = r.deleteFromRunc(ctx, id, dir)
	}
	if err != nil {
		return fmt.Errorf("delete container %s: %w", id, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("delete container %s: %w", id, err)
	}
	return nil
}

// deleteFromRunc force-deletes the container from runc and then stops its monitor.
func (r *Runc) deleteFromRunc(ctx context.Context, id, dir string) error {
	if err := r.runc.Delete(ctx, id, &gorunc.DeleteOpts{Force: true}); err != nil {
		if _, serr := r.runc.State(ctx, id); serr == nil {
			return err
		}
		// runc no longer knows it: nothing to delete there.
	}
	return r.stopMonitor(ctx, dir)
}

// stopMonitor waits for the monitor to finish (it exits once the
// container's exit is recorded) and kills it if it does not.
func (r *Runc) stopMonitor(ctx context.Context, dir string) error {
	proc, err := monitor.ReadProcess(filepath.Join(dir, monitor.PidFile))
	if err != nil || !proc.Alive() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, deleteTimeout)
	defer cancel()
	if _, err := monitor.Call(wctx, dir, monitor.Request{Op: monitor.OpWait}); err == nil || errors.Is(err, monitor.ErrGone) {
		return nil
	}
	if proc.Alive() {
		if err := syscall.Kill(proc.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill monitor: %w", err)
		}
	}
	return nil
}

// Recover reports every container in the state directory. One unreadable
// container never fails the whole: it is reported broken.
func (r *Runc) Recover(ctx context.Context) ([]State, error) {
	entries, err := os.ReadDir(r.cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	var out []State
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		id := e.Name()
		st, err := r.state(ctx, id, filepath.Join(r.cfg.StateDir, id))
		if err != nil {
			r.log.Warn("container state unreadable", "id", id, "err", err)
			st = State{ID: id, Status: StatusUnknown, Broken: err.Error()}
		}
		out = append(out, st)
	}
	return out, nil
}
