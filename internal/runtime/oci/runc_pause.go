package oci

import (
	"context"
	"errors"
	"fmt"
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
	if r.monitorAlive(dir) {
		resp, err := monitor.Call(ctx, dir, monitor.Request{Op: monitor.OpSignal, Signal: int(sig)})
		if err == nil && resp.Error != "" {
			err = errors.New(resp.Error)
		}
		if !errors.Is(err, monitor.ErrGone) {
			return err
		}
	}
	if sig != syscall.SIGKILL {
		return nil // with its monitor gone, only SIGKILL ends it for sure
	}
	return pause.KillCgroups(p.CgroupsPath)
}

// endPause kills a pause process whose monitor is gone and removes its cgroups.
func (r *Runc) endPause(p *pause.Process) error {
	if err := pause.KillCgroups(p.CgroupsPath); err != nil {
		return err
	}
	if err := pause.RemoveCgroups(p.CgroupsPath); err != nil {
		return fmt.Errorf("%w (its processes may still be exiting)", err)
	}
	return nil
}
