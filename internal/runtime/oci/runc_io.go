package oci

import (
	"context"
	"errors"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth/berth/internal/runtime/monitor"
)

// Attach connects the caller to the container's stdio held by its monitor,
// until the container's output ends or ctx is done.
func (r *Runc) Attach(ctx context.Context, id string, opts AttachOptions) error {
	dir, err := r.existingDir(id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var resize chan [2]uint16
	if opts.Resize != nil {
		resize = make(chan [2]uint16)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case sz, ok := <-opts.Resize:
					if !ok {
						return
					}
					select {
					case resize <- [2]uint16{sz.Width, sz.Height}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	err = monitor.Attach(ctx, dir, monitor.AttachStreams{Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr, Resize: resize})
	if errors.Is(err, monitor.ErrGone) || errors.Is(err, monitor.ErrRefused) {
		return status.Errorf(codes.FailedPrecondition, "attach to container %s: %v", id, err)
	}
	return err
}

// ReopenLog makes the monitor reopen the container's log file.
func (r *Runc) ReopenLog(ctx context.Context, id string) error {
	dir, err := r.existingDir(id)
	if err != nil {
		return err
	}
	if _, err := monitor.Call(ctx, dir, monitor.Request{Op: monitor.OpReopen}); err != nil {
		return status.Errorf(codes.FailedPrecondition, "reopen log of %s: %v", id, err)
	}
	return nil
}

// UpdateResources changes the container's cgroup limits with `runc update`.
func (r *Runc) UpdateResources(ctx context.Context, id string, res *specs.LinuxResources) error {
	if _, err := r.existingDir(id); err != nil {
		return err
	}
	if res == nil {
		return status.Error(codes.InvalidArgument, "no resources given")
	}
	if err := r.runc.Update(ctx, id, res); err != nil {
		return fmt.Errorf("update container %s: %w", id, err)
	}
	return nil
}
