// Package crirun starts and tears down what the CRI benchmarks (bench/cri,
// bench/podstartup) run: child processes, a CRI runtime daemon (`berth
// runtime` or containerd) configured like its rival, and the clean-up of
// everything such a daemon leaves behind.
package crirun

import (
	"context"
	"fmt"
	"github.com/berth/berth/internal/testkit/wait"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is a child the bench started, in a process group of its own (so
// a ^C of the bench reaches it only through the bench's clean-up), killed
// with the bench (Pdeathsig) if the bench itself dies.
type Process struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error // set before exited is closed
}

// StartProcess runs bin with args, its output appended to logPath; name
// is what errors call it.
func StartProcess(name, logPath, bin string, args ...string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process's (and its process group's) ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath is the file the process's output goes to.
func (p *Process) LogPath() string { return p.log }

// Alive reports an error, with the end of the log, once the process has exited.
func (p *Process) Alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v; log ends:\n%s", p.name, p.err, TailOf(p.log, 30))
	default:
		return nil
	}
}

// Stop sends SIGTERM and, if the process has not exited within grace,
// SIGKILL to its whole process group.
func (p *Process) Stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	<-p.exited
}

// WaitFor calls ready until it succeeds, the process exits, or timeout
// (a bound on a hung start, not a measurement) or ctx ends.
func (p *Process) WaitFor(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	var last error
	err := wait.PollTrue(ctx, timeout, p.name+" to be ready", func(ctx context.Context) (bool, error) {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if last = ready(attempt); last == nil {
			return true, nil
		}
		return false, p.Alive()
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w: last: %w", err, last)
	}
	return err
}

// TailOf returns the last n lines of the file at path: errors quote it,
// since the bench removes its directory, logs included, on the way out.
func TailOf(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
