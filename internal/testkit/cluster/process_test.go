package cluster

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
)

// A process's output goes to its log, appended across restarts; Stop
// returns its exit error, and an exited process is seen as such.
func TestProcessLogsStopsAndReportsItsExit(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "p.log")
	first := startProcess(t, "first", logPath, "", "/bin/sh", "-c", "echo first-run; exit 3")
	wait.Until(t, time.Minute, "the first run to exit", func() bool { return !first.Running() })
	if err := first.errExited(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("errExited after exit 3 = %v, want it to name exit status 3", err)
	}
	if err := first.Stop(syscall.SIGTERM); err == nil {
		t.Error("Stop of a process that exited 3 returned nil")
	}

	second := startProcess(t, "second", logPath, "", "/bin/sh", "-c", "echo second-run; exec sleep 600")
	wait.Until(t, time.Minute, "the second run to log", func() bool { return strings.Contains(second.Log(), "second-run") })
	if err := second.errExited(); err != nil {
		t.Errorf("errExited of a running process = %v", err)
	}
	if err := second.Stop(syscall.SIGKILL); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop(SIGKILL) = %v, want the kill in the error", err)
	}
	if second.Running() {
		t.Error("still running after Stop")
	}
	if log := second.Tail(); !strings.Contains(log, "first-run\nsecond-run") || !strings.HasPrefix(log, "---- second") {
		t.Errorf("log does not hold both runs in order under the process's name:\n%s", log)
	}
}

func TestMirrorFlagsServeBothRegistriesFromHost(t *testing.T) {
	got := strings.Join(MirrorFlags("127.0.0.1:5000"), " ")
	want := "--insecure-registry 127.0.0.1:5000 --registry-mirror registry.k8s.io=http://127.0.0.1:5000 --registry-mirror docker.io=http://127.0.0.1:5000"
	if got != want {
		t.Errorf("MirrorFlags = %q, want %q", got, want)
	}
}
