package oci

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	gorunc "github.com/containerd/go-runc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth/berth/internal/sibling"
)

// RuncConfig configures the runc handler.
type RuncConfig struct {
	Binary        string // runc path ("" = "runc" from PATH); a sealed copy of it is what runs
	Root          string // runc --root, under the runtime's state dir
	StateDir      string // one directory per container: monitor pid, exit file, sockets
	MonitorBinary string // berth-monitor path ("" = next to the running executable, then PATH)
	Logger        *slog.Logger
}

// Runc implements Runtime by execing runc, with one berth-monitor process
// per container as the container's parent. Everything it knows lives in
// the state directory, so a new Runc over the same directories (after the
// runtime service restarted) picks up where the old one left off.
type Runc struct {
	cfg  RuncConfig
	log  *slog.Logger
	runc *gorunc.Runc
	// sealed is the in-memory copy of the OCI runtime binary that runs
	// (see SealedCopy); nil if the copy could not be made.
	sealed *os.File
	spare  *spareMonitor
}

var _ Runtime = (*Runc)(nil)

// NewRunc checks the configuration and prepares the state directories.
// Close releases what it holds; containers keep running.
func NewRunc(cfg RuncConfig) (*Runc, error) {
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
	for _, d := range []*string{&cfg.Root, &cfg.StateDir} {
		if *d, err = filepath.Abs(*d); err != nil {
			return nil, fmt.Errorf("oci: %w", err)
		}
		if err := os.MkdirAll(*d, 0o700); err != nil {
			return nil, fmt.Errorf("oci: %w", err)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runc{cfg: cfg, log: cfg.Logger}
	if r.sealed, err = SealedCopy(bin); err != nil {
		r.log.Warn("running the OCI runtime from its file", "binary", bin, "err", err)
	} else {
		r.cfg.Binary = ExecPath(r.sealed)
	}
	r.runc = &gorunc.Runc{Command: r.cfg.Binary, Root: cfg.Root}
	r.spare = &spareMonitor{spawn: r.spawnMonitor, log: r.log}
	return r, nil
}

// Close ends the spare monitor and releases the sealed copy of the OCI
// runtime binary; r is unusable afterwards. Containers and their monitors
// keep running.
func (r *Runc) Close() error {
	r.spare.close()
	if r.sealed == nil {
		return nil
	}
	return r.sealed.Close()
}

// findMonitor resolves the monitor binary: as given (a path or a name on
// PATH), else berth-monitor beside the running executable, else on PATH.
func findMonitor(p string) (string, error) {
	if p == "" {
		bin, err := sibling.Find("berth-monitor")
		if err != nil {
			return "", fmt.Errorf("oci: monitor binary: %w", err)
		}
		return bin, nil
	}
	bin, err := exec.LookPath(p)
	if err != nil {
		return "", fmt.Errorf("oci: monitor binary: %w", err)
	}
	return bin, nil
}

// containerDir is the container's state directory, after checking that the
// ID is one safe path element.
func (r *Runc) containerDir(id string) (string, error) {
	if id == "" || len(id) > 128 || strings.ContainsAny(id, "/\x00") || strings.Trim(id, ".") == "" {
		return "", status.Errorf(codes.InvalidArgument, "invalid container ID %q", id)
	}
	return filepath.Join(r.cfg.StateDir, id), nil
}

// existingDir is containerDir for a container that must exist.
func (r *Runc) existingDir(id string) (string, error) {
	dir, err := r.containerDir(id)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", status.Errorf(codes.NotFound, "container %s not found", id)
		}
		return "", fmt.Errorf("container %s: %w", id, err)
	}
	return dir, nil
}
