// Package proc runs berth's subcommands (or any binary) as child processes
// of a test, with their output in a log file, and stops them on demand.
package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// stopGrace is how long Stop waits after its signal before SIGKILL.
const stopGrace = 30 * time.Second

// Process is one running child.
type Process struct {
	Cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs bin with args, stdout and stderr to logPath. The caller stops it.
func Start(t testing.TB, bin, logPath string, args ...string) *Process {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); logFile.Close(); close(p.exited) }()
	return p
}

// Stop sends sig and waits for the process to exit, with SIGKILL after
// stopGrace. Stopping an exited process returns at once.
func (p *Process) Stop(sig syscall.Signal) {
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = p.Cmd.Process.Kill()
		<-p.exited
	}
}
