package multinode

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// process is one berth process the test started in a network namespace.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// start runs `berth ARGS...` inside namespace ns through nsenter, which
// switches only the network namespace (mounts stay the host's, so clean-up
// sees everything the runtime mounted). It is stopped at clean-up: SIGTERM,
// then SIGKILL if it has not exited in time.
func start(t *testing.T, name, ns, logDir string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nsenter", append([]string{"--net=" + nsPath(ns), "--", berthBin}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *process) stop(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Logf("%s did not stop on SIGTERM; killing it", p.name)
		p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tail is the end of the process's output, for failure messages.
func (p *process) tail() string {
	data, _ := os.ReadFile(p.logPath)
	const max = 6000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return "---- " + p.name + " ----\n" + string(bytes.TrimSpace(data))
}
