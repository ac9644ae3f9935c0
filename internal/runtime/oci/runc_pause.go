package oci

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/berth/berth/internal/runtime/monitor"
	"github.com/berth/berth/internal/runtime/pause"
)

// A pod's pause process runs under a monitor like any container, but
// without runc: runc knows nothing of it, so it is signalled through its
// monitor (its parent) and, once that is gone, through its cgroups.

// pauseOf returns the pause process the monitor in dir was started for;
// nil for a container runc runs.
func pauseOf(dir string) (*pause.Process, error) {
	var cfg monitor.Config
	if err := monitor.ReadJSON(filepath.Join(dir, monitor.ConfigFile), &cfg); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // half-created: no monitor was ever configured
		}
		return nil, err
	}
	return cfg.Pause, nil
}

// signalPause signals a pause process: through its live monitor, else
// (SIGKILL only) every process in its cgroups.
func (r *Runc) signalPause(ctx context.Context, dir string, p *pause.Process, sig syscall.Signal) error {
	if err := r.signalThroughMonitor(ctx, dir, sig); !errors.Is(err, monitor.ErrGone) {
		return err
	}
	if sig != syscall.SIGKILL {
		return nil // with its monitor gone, only SIGKILL ends it for sure
	}
	return pause.KillCgroups(p.CgroupsPath)
}

// signalThroughMonitor asks the monitor in dir to signal its pause
// process; monitor.ErrGone if no monitor runs.
func (r *Runc) signalThroughMonitor(ctx context.Context, dir string, sig syscall.Signal) error {
	if !r.monitorAlive(dir) {
		return monitor.ErrGone
	}
	resp, err := monitor.Call(ctx, dir, monitor.Request{Op: monitor.OpSignal, Signal: int(sig)})
	if err == nil && resp.Error != "" {
		err = errors.New(resp.Error)
	}
	return err
}

// deletePause kills a pause process through its monitor, which then
// records the exit, removes its cgroups and exits; what is left, without a
// monitor, is killed through the cgroups, which are then removed.
func (r *Runc) deletePause(ctx context.Context, dir string, p *pause.Process) error {
	if err := r.signalThroughMonitor(ctx, dir, syscall.SIGKILL); err != nil && !errors.Is(err, monitor.ErrGone) {
		return err
	}
	if err := r.stopMonitor(ctx, dir); err != nil {
		return err
	}
	return r.endPause(p)
}

// endPause kills whatever is left in a pause process's cgroups, waiting
// for each to exit, and removes them.
func (r *Runc) endPause(p *pause.Process) error {
	if err := pause.KillCgroups(p.CgroupsPath); err != nil {
		return err
	}
	return pause.RemoveCgroups(p.CgroupsPath)
}
