package proc

import (
	"github.com/berth/berth/internal/testkit/wait"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartLogsAndStopEnds(t *testing.T) {
	log := filepath.Join(t.TempDir(), "sub", "sh.log")
	p := Start(t, "/bin/sh", log, "-c", "echo started; exec sleep 60")
	wait.Until(t, 30*time.Second, "the process to log that it started", func() bool { return strings.Contains(readFile(log), "started") })
	p.Stop(syscall.SIGTERM)
	if p.Cmd.ProcessState == nil || p.Cmd.ProcessState.ExitCode() != -1 {
		t.Fatalf("process state after SIGTERM: %v", p.Cmd.ProcessState)
	}
	p.Stop(syscall.SIGKILL) // already gone: returns
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}
