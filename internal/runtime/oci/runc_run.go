package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	gorunc "github.com/containerd/go-runc"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth/berth/internal/runtime/monitor"
)

// createTimeout bounds the wait for the monitor's sync message when the
// caller's context has no deadline.
const createTimeout = time.Minute

// RunDetached starts a monitor for the container, which runs
// `runc run --detach`. On any failure nothing is left behind: monitor, runc
// state, state dir.
func (r *Runc) RunDetached(ctx context.Context, opts RunOptions) (pid int, err error) {
	dir, err := r.containerDir(opts.ID)
	if err != nil {
		return 0, err
	}
	if opts.Pause != nil {
		if err := opts.Pause.Validate(); err != nil {
			return 0, status.Errorf(codes.InvalidArgument, "%v", err)
		}
	} else if !filepath.IsAbs(opts.BundleDir) {
		return 0, status.Errorf(codes.InvalidArgument, "bundle dir %q is not absolute", opts.BundleDir)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return 0, status.Errorf(codes.AlreadyExists, "container %s already exists", opts.ID)
		}
		return 0, fmt.Errorf("create state dir: %w", err)
	}
	var mon *exec.Cmd
	defer func() {
		if err != nil {
			r.cleanupFailedRun(opts, dir, mon)
		}
		r.spare.fill()
	}()
	if opts.Spec != nil {
		if err := WriteSpec(opts.BundleDir, opts.Spec); err != nil {
			return 0, err
		}
	}
	cfg := monitor.Config{
		ID: opts.ID, Bundle: opts.BundleDir, RuncBinary: r.cfg.Binary, RuncRoot: r.cfg.Root,
		LogPath: opts.LogPath, Terminal: opts.Terminal, Stdin: opts.Stdin, StdinOnce: opts.StdinOnce,
		Pause: opts.Pause,
	}
	if err := monitor.WriteJSON(filepath.Join(dir, monitor.ConfigFile), cfg); err != nil {
		return 0, fmt.Errorf("write monitor config: %w", err)
	}
	mon, syncR, err := r.startMonitor(ctx, dir)
	if err != nil {
		return 0, err
	}
	defer syncR.Close()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, createTimeout)
		defer cancel()
	}
	msg, err := readSync(ctx, syncR)
	if err != nil {
		return 0, fmt.Errorf("create container %s: %w", opts.ID, err)
	}
	r.log.Debug("container created", "id", opts.ID, "pid", msg.Pid, "monitor", mon.Process.Pid)
	return msg.Pid, nil
}

// specFile is the OCI bundle's runtime spec.
const specFile = "config.json"

// WriteSpec writes spec as bundle's config.json, which RunDetached runs when
// given no spec of its own.
func WriteSpec(bundle string, spec *specs.Spec) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("encode spec: %w", err)
	}
	if err := os.WriteFile(filepath.Join(bundle, specFile), data, 0o600); err != nil {
		return fmt.Errorf("write spec: %w", err)
	}
	return nil
}

// ReadSpec reads bundle's config.json.
func ReadSpec(bundle string) (*specs.Spec, error) {
	data, err := os.ReadFile(filepath.Join(bundle, specFile))
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("decode spec %s: %w", filepath.Join(bundle, specFile), err)
	}
	return &spec, nil
}

// startMonitor gives the container whose state dir is dir a monitor: the
// spare one if ready, else a new one.
func (r *Runc) startMonitor(ctx context.Context, dir string) (*exec.Cmd, *os.File, error) {
	if m := r.spare.take(ctx); m != nil {
		err := m.assign(dir)
		if err == nil {
			return m.cmd, m.syncR, nil
		}
		// The spare died while waiting; the container gets its own.
		r.log.Warn("spare monitor unusable", "err", err)
	}
	m, err := r.spawnMonitor()
	if err != nil {
		return nil, nil, err
	}
	if err := m.assign(dir); err != nil {
		return m.cmd, nil, err
	}
	return m.cmd, m.syncR, nil
}

// readSync waits for the monitor's report on `runc run --detach`.
func readSync(ctx context.Context, syncR *os.File) (monitor.SyncMessage, error) {
	type result struct {
		msg monitor.SyncMessage
		err error
	}
	ch := make(chan result, 1)
	go func() {
		data, err := io.ReadAll(syncR)
		var msg monitor.SyncMessage
		if err == nil {
			if len(data) == 0 {
				err = errors.New("monitor exited without reporting")
			} else {
				err = json.Unmarshal(data, &msg)
			}
		}
		if err == nil && msg.Error != "" {
			err = errors.New(msg.Error)
		}
		ch <- result{msg, err}
	}()
	select {
	case res := <-ch:
		return res.msg, res.err
	case <-ctx.Done():
		// Closing the read end makes the reader above return.
		syncR.Close()
		return monitor.SyncMessage{}, fmt.Errorf("waiting for the monitor: %w", ctx.Err())
	}
}

// cleanupFailedRun removes every trace of a container whose creation
// failed: the monitor, runc's state and the state dir.
func (r *Runc) cleanupFailedRun(opts RunOptions, dir string, mon *exec.Cmd) {
	id := opts.ID
	if mon != nil && mon.Process != nil {
		_ = mon.Process.Kill()
	}
	if opts.Pause != nil {
		if err := r.endPause(opts.Pause); err != nil {
			r.log.Warn("end the pause process after a failed create", "id", id, "err", err)
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.runc.Delete(ctx, id, &gorunc.DeleteOpts{Force: true}); err != nil {
			r.log.Debug("runc delete after failed create", "id", id, "err", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		r.log.Warn("remove state dir after failed create", "id", id, "err", err)
	}
}
