package cluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// stopGrace is how long Stop waits after its signal before SIGKILL.
const stopGrace = time.Minute

// Process is one berth child process of the test (server, runtime or
// agent), its output appended to a log file.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process has been waited for
	exitErr error         // valid after exited is closed
}

// startProcess runs `bin args...`, inside network namespace netns (a name
// under /run/netns) unless it is empty. The caller stops it.
func startProcess(t testing.TB, name, logPath, netns, bin string, args ...string) *Process {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	// Appended: a restarted process's log follows its earlier run's.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	if netns != "" {
		// nsenter switches only the network namespace: mounts stay the
		// host's, so clean-up sees everything the runtime mounted. The
		// child dies with the test, which leaves nothing in a namespace
		// the test deletes.
		cmd = exec.Command("nsenter", append([]string{"--net=" + NetNSPath(netns), "--", bin}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() { p.exitErr = cmd.Wait(); logFile.Close(); close(p.exited) }()
	return p
}

// stopAtCleanup stops p with SIGTERM, if it was started and still runs.
func stopAtCleanup(t testing.TB, p *Process) {
	if p == nil {
		return
	}
	if err := p.Stop(syscall.SIGTERM); err != nil && p.stopTimedOut(err) {
		t.Log(err)
	}
}

// NetNSPath is where `ip netns add NAME` pins namespace NAME.
func NetNSPath(name string) string { return "/run/netns/" + name }

// Pid is the process's PID (nsenter's, for a process in a namespace).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// errExited is the error of a process that exited while a test waited on it.
func (p *Process) errExited() error {
	if p.Running() {
		return nil
	}
	return fmt.Errorf("%s exited: %v", p.Name, p.exitErr)
}

// errStopTimedOut marks a Stop that had to SIGKILL.
type errStopTimedOut struct{ error }

func (p *Process) stopTimedOut(err error) bool { _, ok := err.(errStopTimedOut); return ok }

// Stop sends sig and waits for the process to exit, with SIGKILL after
// stopGrace (then the error says so). It returns the exit error: nil after
// a clean exit. Stopping an exited process returns its exit error at once.
func (p *Process) Stop(sig syscall.Signal) error {
	if !p.Running() {
		return p.exitErr
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
		return p.exitErr
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return errStopTimedOut{fmt.Errorf("%s did not stop within %v of %v; killed", p.Name, stopGrace, sig)}
	}
}

// Log is the process's whole log.
func (p *Process) Log() string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// Tail is the end of the process's log, named, for failure messages.
func (p *Process) Tail() string {
	data := []byte(p.Log())
	const max = 8000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return "---- " + p.Name + " (" + p.LogPath + ") ----\n" + string(bytes.TrimSpace(data))
}
