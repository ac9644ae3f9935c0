// Package supervisor runs berth's own child processes (the local runtime and
// agent under `berth server`): each dies with its parent (Pdeathsig), is
// restarted with capped exponential back-off when it exits, and is stopped
// with SIGTERM, then SIGKILL after a grace period, when its context ends.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"syscall"
	"time"
)

// Child describes one supervised process.
type Child struct {
	Name string
	Path string
	Args []string
	// Output receives the child's stdout and stderr.
	Output io.Writer
	// Ready, if set, is polled after start until it returns nil (e.g. a CRI
	// Version call succeeding); the child counts as started only then.
	Ready func(ctx context.Context) error
	// StopGrace is how long SIGTERM has before SIGKILL (default 10 s).
	StopGrace time.Duration
}

// Back-off between restarts: 1 s doubling to 1 minute; a child that ran for
// longer than resetAfter starts again from the initial delay.
const (
	initialBackoff = time.Second
	maxBackoff     = time.Minute
	resetAfter     = 2 * time.Minute
)

// Run keeps c running until ctx ends. started is closed the first time the
// child becomes ready (nil is allowed).
func Run(ctx context.Context, c Child, log *slog.Logger, started chan<- struct{}) {
	backoff := initialBackoff
	signalled := false
	for ctx.Err() == nil {
		begin := time.Now()
		err := runOnce(ctx, c, log, func() {
			if started != nil && !signalled {
				close(started)
				signalled = true
			}
		})
		if ctx.Err() != nil {
			return
		}
		if time.Since(begin) > resetAfter {
			backoff = initialBackoff
		}
		log.Warn("child exited; restarting", "child", c.Name, "err", err, "after", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func runOnce(ctx context.Context, c Child, log *slog.Logger, onReady func()) error {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Stdout, cmd.Stderr = c.Output, c.Output
	// Die with the parent even if it is killed with SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.Name, err)
	}
	log.Info("child started", "child", c.Name, "pid", cmd.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	readyCtx, cancelReady := context.WithCancel(ctx)
	defer cancelReady()
	go func() {
		if c.Ready == nil || waitReady(readyCtx, c.Ready) == nil {
			if readyCtx.Err() == nil {
				log.Info("child ready", "child", c.Name)
				onReady()
			}
		}
	}()

	select {
	case err := <-exited:
		return exitError(err)
	case <-ctx.Done():
		return stop(c, cmd, exited, log)
	}
}

func waitReady(ctx context.Context, ready func(context.Context) error) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := ready(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func stop(c Child, cmd *exec.Cmd, exited <-chan error, log *slog.Logger) error {
	grace := c.StopGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		log.Info("child stopped", "child", c.Name)
		return exitError(err)
	case <-time.After(grace):
		log.Warn("child ignored SIGTERM; killing", "child", c.Name, "grace", grace)
		_ = cmd.Process.Kill()
		return exitError(<-exited)
	}
}

func exitError(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("exited with %v", exit.ProcessState)
	}
	return err
}
