package oci

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// RuncConfig configures the runc handler.
type RuncConfig struct {
	Binary        string // runc path ("" = "runc" from PATH)
	Root          string // runc --root, under the runtime's state dir
	StateDir      string // one directory per container: monitor pid, exit file, sockets
	MonitorBinary string // berth-monitor path ("" = next to the running executable, then PATH)
	Logger        *slog.Logger
}

// Runc implements Runtime by execing runc under a berth-monitor per container.
type Runc struct {
	cfg RuncConfig
	log *slog.Logger
}

var _ Runtime = (*Runc)(nil)

// NewRunc checks the configuration and prepares the state directories.
func NewRunc(cfg RuncConfig) (Runtime, error) {
	return newRunc(cfg)
}

func newRunc(cfg RuncConfig) (*Runc, error) {
	if cfg.Root == "" || cfg.StateDir == "" {
		return nil, errors.New("oci: runc root and state dir are required")
	}
	if cfg.Binary == "" {
		cfg.Binary = "runc"
	}
	bin, err := exec.LookPath(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("oci: runc binary: %w", err)
	}
	cfg.Binary = bin
	if cfg.MonitorBinary, err = findMonitor(cfg.MonitorBinary); err != nil {
		return nil, err
	}
	for _, d := range []string{cfg.Root, cfg.StateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("oci: %w", err)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runc{cfg: cfg, log: cfg.Logger}, nil
}

// findMonitor resolves the monitor binary: as given, else berth-monitor
// beside the running executable, else on PATH.
func findMonitor(p string) (string, error) {
	if p == "" {
		if self, err := os.Executable(); err == nil {
			near := filepath.Join(filepath.Dir(self), "berth-monitor")
			if _, err := os.Stat(near); err == nil {
				return near, nil
			}
		}
		p = "berth-monitor"
	}
	bin, err := exec.LookPath(p)
	if err != nil {
		return "", fmt.Errorf("oci: monitor binary: %w", err)
	}
	return bin, nil
}

var errNotYet = errors.New("oci: not implemented yet")

func (r *Runc) Create(ctx context.Context, opts CreateOptions) error { return errNotYet }
func (r *Runc) Start(ctx context.Context, id string) error           { return errNotYet }
func (r *Runc) Kill(ctx context.Context, id string, sig syscall.Signal, all bool) error {
	return errNotYet
}
func (r *Runc) Wait(ctx context.Context, id string) (State, error)  { return State{}, errNotYet }
func (r *Runc) Delete(ctx context.Context, id string) error         { return errNotYet }
func (r *Runc) State(ctx context.Context, id string) (State, error) { return State{}, errNotYet }
func (r *Runc) Exec(ctx context.Context, id string, opts ExecOptions) (int32, error) {
	return 0, errNotYet
}
func (r *Runc) Attach(ctx context.Context, id string, opts AttachOptions) error { return errNotYet }
func (r *Runc) UpdateResources(ctx context.Context, id string, res *specs.LinuxResources) error {
	return errNotYet
}
func (r *Runc) Stats(ctx context.Context, id string) (Stats, error) { return Stats{}, errNotYet }
func (r *Runc) ReopenLog(ctx context.Context, id string) error      { return errNotYet }
func (r *Runc) Recover(ctx context.Context) ([]State, error)        { return nil, errNotYet }
