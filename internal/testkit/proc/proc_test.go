package proc

import (
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
	for !strings.Contains(readFile(log), "started") {
		time.Sleep(10 * time.Millisecond) // bounded by the test timeout
	}
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
