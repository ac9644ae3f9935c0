package oci

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/berth/berth/internal/runtime/monitor"
)

// monitorProc is a started monitor that waits for the ID of the container
// it is to run (see monitor.AwaitStart).
type monitorProc struct {
	cmd    *exec.Cmd
	startW *os.File // the go: the container's ID, then closed
	syncR  *os.File // the monitor's report on `runc run --detach`
}

// spawnMonitor starts a monitor in its own session with a start pipe and a
// sync pipe, for any container under the state dir.
func (r *Runc) spawnMonitor() (*monitorProc, error) {
	startR, startW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer startR.Close()
	syncR, syncW, err := os.Pipe()
	if err != nil {
		startW.Close()
		return nil, err
	}
	defer syncW.Close()
	cmd := exec.Command(r.cfg.MonitorBinary, r.cfg.StateDir)
	cmd.Dir = r.cfg.StateDir
	cmd.Env = MonitorEnv()
	cmd.ExtraFiles = []*os.File{startR, syncW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		startW.Close()
		syncR.Close()
		return nil, fmt.Errorf("start monitor: %w", err)
	}
	// While this runtime lives it is the monitor's parent and must reap it
	// when it exits (after its container).
	reapOnExit(cmd.Process)
	return &monitorProc{cmd: cmd, startW: startW, syncR: syncR}, nil
}

// MonitorEnv is a monitor's environment, which the runc it runs inherits:
// the runtime's own, with GOMAXPROCS=1. One P is plenty for a process that
// mostly sleeps, and each extra P and thread costs resident memory in every
// monitor (and start-up time in every short-lived runc).
func MonitorEnv() []string { return append(os.Environ(), "GOMAXPROCS=1") }

// assign gives the monitor its container, whose state dir is dir. The
// monitor's identity (PID and start time) is recorded there first, so no
// monitor ever runs a container unrecorded.
func (m *monitorProc) assign(dir string) error {
	defer m.startW.Close()
	proc, err := monitor.ProcessOf(m.cmd.Process.Pid)
	if err == nil && !proc.Alive() {
		// A zombie: its start pipe may still take the write for a moment.
		err = fmt.Errorf("monitor %d has exited", proc.Pid)
	}
	if err == nil {
		err = monitor.WriteProcess(filepath.Join(dir, monitor.PidFile), proc)
	}
	if err == nil {
		_, err = m.startW.WriteString(filepath.Base(dir))
	}
	if err != nil {
		_ = m.cmd.Process.Kill()
		m.syncR.Close()
		return fmt.Errorf("start monitor: %w", err)
	}
	return nil
}

// discard lets an unassigned monitor go: with its start pipe closed and no
// ID on it, it exits.
func (m *monitorProc) discard() {
	m.startW.Close()
	m.syncR.Close()
}

// spareMonitor keeps one monitor started ahead of need, so that starting a
// container or a pod does not wait for a monitor program to load and
// initialise (~10 ms here, on the critical path of every start). A start
// that finds none ready starts its own. It is refilled in the background
// once the start that took it is over, so that making it never competes for
// the CPU with that start's `runc run`.
type spareMonitor struct {
	spawn func() (*monitorProc, error)
	log   *slog.Logger

	mu    sync.Mutex
	ready *monitorProc
	// filled is closed when the spare being made is ready (or failed);
	// nil when none is being made.
	filled  chan struct{}
	closed  bool
	fillers sync.WaitGroup
}

// take returns the spare monitor, or nil if none is ready. A spare being
// made is waited for: it is further along than a new one would be.
func (s *spareMonitor) take(ctx context.Context) *monitorProc {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready == nil && s.filled != nil {
		filled := s.filled
		s.mu.Unlock()
		select {
		case <-filled:
		case <-ctx.Done():
		}
		s.mu.Lock()
	}
	m := s.ready
	s.ready = nil
	return m
}

// fill starts making a spare monitor unless one is ready or being made.
func (s *spareMonitor) fill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.filled != nil || s.ready != nil {
		return
	}
	filled := make(chan struct{})
	s.filled = filled
	s.fillers.Add(1)
	go func() {
		defer s.fillers.Done()
		m, err := s.spawn()
		s.mu.Lock()
		defer s.mu.Unlock()
		defer close(filled)
		s.filled = nil
		switch {
		case err != nil:
			s.log.Warn("no spare monitor", "err", err)
		case s.closed:
			m.discard()
		default:
			s.ready = m
		}
	}()
}

// close discards the spare and waits for one being made.
func (s *spareMonitor) close() {
	s.mu.Lock()
	s.closed = true
	if s.ready != nil {
		s.ready.discard()
		s.ready = nil
	}
	s.mu.Unlock()
	s.fillers.Wait()
}
