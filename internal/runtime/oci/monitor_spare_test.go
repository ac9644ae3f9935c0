package oci

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/berth/berth/internal/runtime/monitor"
	"github.com/berth/berth/internal/testkit/wait"
)

// readySpare waits for the runtime's spare monitor and returns it.
func (e *testEnv) readySpare() monitor.Process {
	e.t.Helper()
	var pid int
	wait.Until(e.t, time.Minute, "a spare monitor", func() bool {
		e.rt.spare.mu.Lock()
		defer e.rt.spare.mu.Unlock()
		if e.rt.spare.ready != nil {
			pid = e.rt.spare.ready.cmd.Process.Pid
		}
		return pid != 0
	})
	proc, err := monitor.ProcessOf(pid)
	if err != nil {
		e.t.Fatal(err)
	}
	return proc
}

func (e *testEnv) monitorOf(id string) monitor.Process {
	e.t.Helper()
	proc, err := monitor.ReadProcess(filepath.Join(e.stateDir, id, monitor.PidFile))
	if err != nil {
		e.t.Fatal(err)
	}
	return proc
}

// The monitor started ahead of need runs the next container, another is
// made for the one after, and closing the runtime ends only the spare.
func TestSpareMonitorRunsTheNextContainer(t *testing.T) {
	e := newTestEnv(t)
	e.run("first", containerOpts{args: []string{"sleep", "1000"}})
	spare := e.readySpare()
	e.run("second", containerOpts{args: []string{"sleep", "1000"}})
	if got := e.monitorOf("second"); got != spare {
		t.Errorf("second's monitor is %+v, want the spare %+v", got, spare)
	}
	if st := e.state("second"); st.Status != StatusRunning {
		t.Errorf("second: %+v, want running", st)
	}
	next := e.readySpare()
	if next == spare {
		t.Fatal("the spare was not replaced after it was taken")
	}
	if err := e.rt.Close(); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, "the unused spare's end", func() bool { return !next.Alive() })
	for _, id := range []string{"first", "second"} {
		if !e.monitorOf(id).Alive() {
			t.Errorf("closing the runtime ended %s's monitor", id)
		}
	}
	// As after a restart, a new runtime cleans up.
	e.rt = e.newRuntime()
}

// A spare that died while waiting is never handed a container: the
// container gets a monitor of its own.
func TestDeadSpareMonitorIsReplaced(t *testing.T) {
	e := newTestEnv(t)
	e.run("first", containerOpts{args: []string{"sleep", "1000"}})
	spare := e.readySpare()
	if err := syscall.Kill(spare.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, "the spare's end", func() bool { return !spare.Alive() })
	e.run("second", containerOpts{args: []string{"sleep", "1000"}})
	got := e.monitorOf("second")
	if got == spare || !got.Alive() {
		t.Errorf("second's monitor %+v (alive %v), want a live one other than the dead spare %+v", got, got.Alive(), spare)
	}
	if st := e.state("second"); st.Status != StatusRunning {
		t.Errorf("second: %+v, want running", st)
	}
}
