// Package oci puts the OCI runtime binary (runc by default) and the per-pod
// monitor process behind one small interface, so the CRI layer never execs
// anything itself and another handler can be added without touching it.
package oci

import (
	"context"
	"io"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berth/berth/internal/runtime/pause"
)

// Status is a container's lifecycle state as the monitor and OCI runtime see it.
type Status string

const (
	StatusCreated Status = "created"
	StatusRunning Status = "running"
	StatusStopped Status = "stopped"
	StatusUnknown Status = "unknown"
)

// RunOptions describes a container to create and start.
type RunOptions struct {
	ID        string
	SandboxID string
	BundleDir string // holds config.json; rootfs is at Spec.Root.Path
	// Spec is written to the bundle's config.json first; nil runs the
	// config.json already there.
	Spec      *specs.Spec
	LogPath   string // CRI-format log file the monitor writes ("" = discard)
	Terminal  bool
	Stdin     bool // keep stdin open for attach
	StdinOnce bool
	// Pause, when set, makes this a pod's pause process, which the monitor
	// starts directly, without the OCI runtime; BundleDir and Spec are unused.
	Pause *pause.Process
}

// State is what the runtime knows about one container.
type State struct {
	ID         string
	Status     Status
	Pid        int
	ExitCode   int32
	StartedAt  time.Time
	FinishedAt time.Time
	OOMKilled  bool
	// Broken is non-empty when the container can no longer be managed
	// (its monitor is gone while the OCI runtime still has it, or it was
	// only half created); it says why. The CRI layer should report it as
	// exited and clean it up with Delete.
	Broken string
}

// ExecOptions runs an extra process in a running container.
type ExecOptions struct {
	Process *specs.Process
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Resize  <-chan TerminalSize
}

// TerminalSize is a TTY resize request.
type TerminalSize struct{ Width, Height uint16 }

// AttachOptions connects to a running container's stdio held by its monitor.
type AttachOptions struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Resize <-chan TerminalSize
}

// Stats are a container's resource usage at one moment.
type Stats struct {
	Timestamp        time.Time
	CPUUsageNanos    uint64
	MemoryWorkingSet uint64
	MemoryUsage      uint64
	MemoryRSS        uint64
	PageFaults       uint64
	MajorPageFaults  uint64
}

// Runtime is the whole of what the CRI layer may ask of the OCI runtime and monitor.
type Runtime interface {
	// RunDetached starts a monitor for the container, which creates and
	// starts it in one OCI runtime invocation (`<oci-runtime> run --detach`).
	// It returns the container process's pid.
	RunDetached(ctx context.Context, opts RunOptions) (pid int, err error)
	// Kill signals the container's init process (all=true: every process).
	Kill(ctx context.Context, id string, sig syscall.Signal, all bool) error
	// Wait blocks until the container has exited or ctx ends.
	Wait(ctx context.Context, id string) (State, error)
	// Delete removes the container from the OCI runtime and stops its monitor.
	Delete(ctx context.Context, id string) error
	State(ctx context.Context, id string) (State, error)
	// Exec runs a process in the container and returns its exit code.
	Exec(ctx context.Context, id string, opts ExecOptions) (int32, error)
	Attach(ctx context.Context, id string, opts AttachOptions) error
	UpdateResources(ctx context.Context, id string, res *specs.LinuxResources) error
	Stats(ctx context.Context, id string) (Stats, error)
	// ReopenLog makes the monitor close and reopen the container's log file.
	ReopenLog(ctx context.Context, id string) error
	// Recover lists containers whose monitors survive from an earlier run,
	// with their state (reading exit files for those that exited meanwhile).
	Recover(ctx context.Context) ([]State, error)
}
