package oci

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/monitor"
	"github.com/berth/berth/internal/testkit/testio"
	"github.com/berth/berth/internal/testkit/wait"
)

type logRecord struct {
	time    time.Time
	stream  string
	partial bool
	content string
}

var logLine = regexp.MustCompile(`^(\S+) (stdout|stderr) (P|F) (.*)$`)

// readLog parses a CRI-format log file, failing on any malformed line.
func readLog(t *testing.T, path string) []logRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []logRecord
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		m := logLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("malformed CRI log line %q", line)
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatalf("log timestamp %q: %v", m[1], err)
		}
		out = append(out, logRecord{time: ts, stream: m[2], partial: m[3] == "P", content: m[4]})
	}
	return out
}

func TestCreateWaitWritesCRILogAndExitCode(t *testing.T) {
	e := newTestEnv(t)
	opts := e.run("c1", containerOpts{args: []string{"sh", "-c", "echo out; echo err >&2; echo -n tail; exit 3"}})
	st := e.wait("c1")
	if st.Status != StatusStopped || st.ExitCode != 3 || st.FinishedAt.IsZero() || st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
		t.Fatalf("after exit: %+v", st)
	}
	recs := readLog(t, opts.LogPath)
	got := map[string]bool{}
	for _, r := range recs {
		got[r.stream+" "+r.content] = !r.partial
	}
	// The last line has no newline: a partial record, as containerd logs it.
	for want, wantFull := range map[string]bool{"stdout out": true, "stderr err": true, "stdout tail": false} {
		if full, ok := got[want]; !ok || full != wantFull {
			t.Errorf("log lacks record %q (full %v): %+v", want, wantFull, recs)
		}
	}
	if err := e.rt.Delete(ctx(t), "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.State(ctx(t), "c1"); status.Code(err) != codes.NotFound {
		t.Errorf("State after Delete: %v", err)
	}
	if _, err := e.rt.runc.State(ctx(t), "c1"); err == nil {
		t.Error("runc still knows the deleted container")
	}
}

// A container runs as it is created (one `runc run --detach`): it is never
// seen created, its start time is recorded, and an init that exits at once
// is still recorded with its code.
func TestCreateRunsAtOnce(t *testing.T) {
	e := newTestEnv(t)
	pids := map[string]int{}
	for _, tc := range []struct {
		id   string
		args []string
	}{{"sleeper", []string{"sleep", "100"}}, {"quick", []string{"sh", "-c", "exit 7"}}} {
		opts := e.createOptionsOnly(tc.id, containerOpts{args: tc.args})
		pid, err := e.rt.RunDetached(ctx(t), opts)
		if err != nil || pid <= 0 {
			t.Fatalf("RunDetached %s: pid %d, %v", tc.id, pid, err)
		}
		pids[tc.id] = pid
		t.Cleanup(func() { _ = e.rt.Delete(context.Background(), tc.id) })
		if st := e.state(tc.id); st.Status == StatusCreated || st.StartedAt.IsZero() || (st.Status == StatusRunning && st.Pid <= 0) {
			t.Errorf("%s after RunDetached: %+v, want running (or stopped) with a start time", tc.id, st)
		}
	}
	if st := e.state("sleeper"); st.Status != StatusRunning || st.Pid != pids["sleeper"] {
		t.Errorf("sleeper: %+v, want running as pid %d, the one RunDetached returned", st, pids["sleeper"])
	}
	if st := e.wait("quick"); st.Status != StatusStopped || st.ExitCode != 7 || st.FinishedAt.Before(st.StartedAt) {
		t.Errorf("quick after exit: %+v, want stopped with code 7", st)
	}
}

func TestLongLinesAreSplitIntoPartialRecords(t *testing.T) {
	e := newTestEnv(t)
	// 40000 'a's and a newline: two 16 KiB partial records and a full one.
	opts := e.run("long", containerOpts{args: []string{"sh", "-c", "head -c 40000 /dev/zero | tr '\\0' a; echo"}})
	if st := e.wait("long"); st.ExitCode != 0 {
		t.Fatalf("exit %d", st.ExitCode)
	}
	recs := readLog(t, opts.LogPath)
	if len(recs) != 3 {
		t.Fatalf("want 3 records, got %d", len(recs))
	}
	for i, want := range []struct {
		partial bool
		n       int
	}{{true, 16384}, {true, 16384}, {false, 40000 - 2*16384}} {
		if recs[i].partial != want.partial || len(recs[i].content) != want.n || strings.Trim(recs[i].content, "a") != "" {
			t.Errorf("record %d: partial=%v len=%d, want partial=%v len=%d", i, recs[i].partial, len(recs[i].content), want.partial, want.n)
		}
	}
}

func TestCreateRejectsDuplicateAndBadInput(t *testing.T) {
	e := newTestEnv(t)
	opts := e.run("dup", containerOpts{args: []string{"sleep", "100"}})
	if _, err := e.rt.RunDetached(ctx(t), opts); status.Code(err) != codes.AlreadyExists {
		t.Errorf("duplicate RunDetached: %v", err)
	}
	if st := e.state("dup"); st.Status != StatusRunning {
		t.Errorf("duplicate RunDetached disturbed the first: %+v", st)
	}
	for _, id := range []string{"", "../x", "a/b", ".."} {
		if _, err := e.rt.RunDetached(ctx(t), RunOptions{ID: id, BundleDir: "/tmp"}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("RunDetached(%q): %v", id, err)
		}
	}
	if _, err := e.rt.State(ctx(t), "nope"); status.Code(err) != codes.NotFound {
		t.Errorf("State of unknown: %v", err)
	}
}

func TestFailedCreateLeavesNothingBehind(t *testing.T) {
	e := newTestEnv(t)
	bundle := filepath.Join(e.base, "bundles", "bad")
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	// A network namespace path that does not exist makes runc create fail.
	opts := e.createOptionsOnly("bad", containerOpts{args: []string{"true"}, netns: "/nonexistent/netns"})
	_, err := e.rt.RunDetached(ctx(t), opts)
	if err == nil {
		t.Fatal("RunDetached with a missing netns succeeded")
	}
	t.Logf("create error: %v", err)
	if _, err := os.Stat(filepath.Join(e.stateDir, "bad")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir left behind: %v", err)
	}
	if _, err := e.rt.runc.State(ctx(t), "bad"); err == nil {
		t.Error("runc state left behind")
	}
	if states, err := e.rt.Recover(ctx(t)); err != nil || len(states) != 0 {
		t.Errorf("Recover after failed create: %v %+v", err, states)
	}
}

func TestRecoverAfterRuntimeRestart(t *testing.T) {
	e := newTestEnv(t)
	e.run("running", containerOpts{args: []string{"sleep", "1000"}})
	e.run("exited", containerOpts{args: []string{"sh", "-c", "exit 7"}})
	e.wait("exited")
	runningPid := e.state("running").Pid

	// The runtime service dies; a new one starts over the same state.
	e.rt = e.newRuntime()
	states, err := e.rt.Recover(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]State{}
	for _, s := range states {
		byID[s.ID] = s
	}
	if s := byID["running"]; s.Status != StatusRunning || s.Pid != runningPid || s.Broken != "" {
		t.Errorf("running container after restart: %+v", s)
	}
	if s := byID["exited"]; s.Status != StatusStopped || s.ExitCode != 7 {
		t.Errorf("exited container after restart: %+v", s)
	}
	// The new runtime drives the old containers: kill, wait.
	if err := e.rt.Kill(ctx(t), "running", syscall.SIGKILL, false); err != nil {
		t.Fatal(err)
	}
	if st := e.wait("running"); st.ExitCode != 137 {
		t.Errorf("killed container: %+v", st)
	}
}

func TestExitWhileRuntimeDownIsRecorded(t *testing.T) {
	e := newTestEnv(t)
	opts := e.run("x", containerOpts{args: []string{"sh", "-c", "read line; exit 9"}, stdin: true, stdinOnce: true})
	_ = opts
	// "Runtime down": nothing of the old Runc is used again. The container
	// exits when its stdin closes, through a fresh runtime's attach.
	rt2 := e.newRuntime()
	if err := rt2.Attach(ctx(t), "x", AttachOptions{Stdin: strings.NewReader("go\n")}); err != nil {
		t.Fatal(err)
	}
	e.rt = e.newRuntime()
	st := e.wait("x")
	if st.Status != StatusStopped || st.ExitCode != 9 {
		t.Fatalf("exit recorded while down: %+v", st)
	}
}

func TestMonitorKilledIsReportedBrokenAndCleaned(t *testing.T) {
	e := newTestEnv(t)
	e.run("m", containerOpts{args: []string{"sleep", "1000"}})
	e.killMonitor("m")
	st := e.state("m")
	if st.Status != StatusUnknown || !strings.Contains(st.Broken, "monitor gone") {
		t.Fatalf("container whose monitor was killed: %+v", st)
	}
	if err := e.rt.Delete(ctx(t), "m"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.runc.State(ctx(t), "m"); err == nil {
		t.Error("runc still has the broken container after Delete")
	}
}

func TestReusedMonitorPidIsNotMistakenForTheMonitor(t *testing.T) {
	e := newTestEnv(t)
	e.run("r", containerOpts{args: []string{"sleep", "1000"}})
	pidFile := filepath.Join(e.stateDir, "r", monitor.PidFile)
	old, err := monitor.ReadProcess(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(old.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, "the monitor to die", func() bool { return !old.Alive() })
	// An unrelated live process now holds the recorded PID (as after PID
	// reuse): its start time differs from the one recorded.
	other := exec.Command("sleep", "1000")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	if err := monitor.WriteProcess(pidFile, monitor.Process{Pid: other.Process.Pid, StartTime: old.StartTime}); err != nil {
		t.Fatal(err)
	}
	st := e.state("r")
	if st.Status != StatusUnknown || st.Broken == "" {
		t.Fatalf("a reused PID was taken for the monitor: %+v", st)
	}
	if err := e.rt.Delete(ctx(t), "r"); err != nil {
		t.Fatal(err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("Delete killed the unrelated process holding the reused PID: %v", err)
	}
}

func TestExecOutputStdinAndExitCode(t *testing.T) {
	e := newTestEnv(t)
	e.run("e", containerOpts{args: []string{"sleep", "1000"}})
	var stdout, stderr testio.SyncBuffer
	code, err := e.rt.Exec(ctx(t), "e", ExecOptions{
		Process: &specs.Process{Args: []string{"sh", "-c", "echo hi; echo oops >&2; exit 5"}, Cwd: "/", Env: []string{"PATH=/bin"}},
		Stdout:  &stdout, Stderr: &stderr,
	})
	if err != nil || code != 5 || stdout.String() != "hi\n" || stderr.String() != "oops\n" {
		t.Fatalf("exec: code %d err %v stdout %q stderr %q", code, err, stdout.String(), stderr.String())
	}
	stdout = testio.SyncBuffer{}
	code, err = e.rt.Exec(ctx(t), "e", ExecOptions{
		Process: &specs.Process{Args: []string{"cat"}, Cwd: "/", Env: []string{"PATH=/bin"}},
		Stdin:   strings.NewReader("from stdin"), Stdout: &stdout,
	})
	if err != nil || code != 0 || stdout.String() != "from stdin" {
		t.Fatalf("exec with stdin: code %d err %v stdout %q", code, err, stdout.String())
	}
	if err := e.rt.Kill(ctx(t), "e", syscall.SIGKILL, false); err != nil {
		t.Fatal(err)
	}
	e.wait("e")
	_, err = e.rt.Exec(ctx(t), "e", ExecOptions{Process: &specs.Process{Args: []string{"true"}, Cwd: "/"}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("exec in a stopped container: %v", err)
	}
}

func TestExecWithTerminal(t *testing.T) {
	e := newTestEnv(t)
	e.run("tty", containerOpts{args: []string{"sleep", "1000"}})
	var out testio.SyncBuffer
	resize := make(chan TerminalSize, 1)
	resize <- TerminalSize{Width: 123, Height: 45} // the size the session starts with
	// The process waits until each size has reached its terminal: a resize
	// that never arrives ends the test at its context deadline.
	script := `tty; until [ "$(stty size 2>/dev/null)" = "45 123" ]; do sleep 0.05; done; echo first-size-ok
until [ "$(stty size 2>/dev/null)" = "20 50" ]; do sleep 0.05; done; exit 2`
	done := make(chan error, 1)
	var code int32
	go func() {
		var err error
		code, err = e.rt.Exec(ctx(t), "tty", ExecOptions{
			Process: &specs.Process{Args: []string{"sh", "-c", script}, Cwd: "/", Env: []string{"PATH=/bin"}, Terminal: true},
			Stdout:  &out, Resize: resize,
		})
		done <- err
	}()
	wait.Until(t, time.Minute, "the first size to reach the terminal", func() bool { return strings.Contains(out.String(), "first-size-ok") })
	resize <- TerminalSize{Width: 50, Height: 20}
	if err := <-done; err != nil || code != 2 {
		t.Fatalf("tty exec: code %d err %v out %q", code, err, out.String())
	}
	if !strings.Contains(out.String(), "/dev/pts/") {
		t.Errorf("tty exec output %q lacks the terminal name", out.String())
	}
}

func TestAttachStreamsStdioAndClosesStdinOnce(t *testing.T) {
	e := newTestEnv(t)
	opts := e.run("a", containerOpts{args: []string{"sh", "-c", "while read l; do echo got $l; echo err $l >&2; done; exit 4"}, stdin: true, stdinOnce: true})
	var stdout, stderr testio.SyncBuffer
	err := e.rt.Attach(ctx(t), "a", AttachOptions{Stdin: strings.NewReader("one\ntwo\n"), Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "got one\ngot two\n" || stderr.String() != "err one\nerr two\n" {
		t.Errorf("attach stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if st := e.wait("a"); st.ExitCode != 4 {
		t.Errorf("exit after stdin closed: %+v", st)
	}
	recs := readLog(t, opts.LogPath)
	if len(recs) != 4 {
		t.Errorf("attached output not logged: %+v", recs)
	}
	if err := e.rt.Attach(ctx(t), "a", AttachOptions{Stdout: &stdout}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("attach to an exited container: %v", err)
	}
}

func TestAttachTerminal(t *testing.T) {
	e := newTestEnv(t)
	opts := e.run("at", containerOpts{args: []string{"sh"}, terminal: true, stdin: true, stdinOnce: true})
	var out testio.SyncBuffer
	resize := make(chan TerminalSize, 1)
	resize <- TerminalSize{Width: 100, Height: 30}
	stdin, w := ioPipe()
	done := make(chan error, 1)
	go func() { done <- e.rt.Attach(ctx(t), "at", AttachOptions{Stdin: stdin, Stdout: &out, Resize: resize}) }()
	wait.Until(t, time.Minute, "the shell prompt", func() bool { return strings.Contains(out.String(), "#") })
	// The shell waits for the size to arrive (a lost resize ends the test at
	// its context deadline), then proves it ran through the terminal.
	if _, err := w.Write([]byte("until [ \"$(stty size)\" = '30 100' ]; do sleep 0.05; done; echo tty-$((40+2)); exit 6\n")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	w.Close()
	if !strings.Contains(out.String(), "tty-42") {
		t.Errorf("terminal attach output %q", out.String())
	}
	if st := e.wait("at"); st.ExitCode != 6 {
		t.Errorf("terminal container exit %+v", st)
	}
	found := false
	for _, r := range readLog(t, opts.LogPath) {
		found = found || (r.stream == "stdout" && strings.Contains(r.content, "tty-42"))
	}
	if !found {
		t.Error("terminal output not in the log")
	}
}

func TestReopenLog(t *testing.T) {
	e := newTestEnv(t)
	opts := e.run("log", containerOpts{args: []string{"sh", "-c", "while read l; do echo $l; done"}, stdin: true, stdinOnce: true})
	stdin, w := ioPipe()
	done := make(chan error, 1)
	go func() { done <- e.rt.Attach(ctx(t), "log", AttachOptions{Stdin: stdin}) }()
	w.Write([]byte("before\n"))
	wait.Until(t, time.Minute, "the first line in the log", func() bool {
		data, _ := os.ReadFile(opts.LogPath)
		return strings.Contains(string(data), "before")
	})
	rotated := opts.LogPath + ".1"
	if err := os.Rename(opts.LogPath, rotated); err != nil {
		t.Fatal(err)
	}
	if err := e.rt.ReopenLog(ctx(t), "log"); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("after\n"))
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.wait("log")
	oldRecs, newRecs := readLog(t, rotated), readLog(t, opts.LogPath)
	if len(oldRecs) != 1 || oldRecs[0].content != "before" || len(newRecs) != 1 || newRecs[0].content != "after" {
		t.Errorf("rotated log %+v, new log %+v", oldRecs, newRecs)
	}
}

func TestStatsAndUpdateResources(t *testing.T) {
	e := newTestEnv(t)
	e.run("s", containerOpts{args: []string{"sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 1000"},
		resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 32 << 20, CpuShares: 256}})
	st, err := e.rt.Stats(ctx(t), "s")
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUUsageNanos == 0 || st.MemoryUsage == 0 || st.MemoryWorkingSet > st.MemoryUsage {
		t.Errorf("stats %+v", st)
	}
	limit := int64(64 << 20)
	shares := uint64(512)
	if err := e.rt.UpdateResources(ctx(t), "s", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}, CPU: &specs.LinuxCPU{Shares: &shares}}); err != nil {
		t.Fatal(err)
	}
	got := readCgroupValue(t, e.state("s").Pid, "memory", "memory.limit_in_bytes", "memory.max")
	if got != "67108864" {
		t.Errorf("memory limit after update: %s", got)
	}
	if err := e.rt.UpdateResources(ctx(t), "missing", &specs.LinuxResources{}); status.Code(err) != codes.NotFound {
		t.Errorf("update of unknown container: %v", err)
	}
}

func TestOOMKilledIsReported(t *testing.T) {
	e := newTestEnv(t)
	// dd with a block size above the limit must allocate it all at once.
	e.run("oom", containerOpts{args: []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"},
		resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 16 << 20}})
	st := e.wait("oom")
	if !st.OOMKilled || st.ExitCode != 137 {
		t.Fatalf("OOM-killed container: %+v", st)
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	e := newTestEnv(t)
	e.run("w", containerOpts{args: []string{"sleep", "1000"}})
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.rt.Wait(c, "w"); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v", err)
	}
}

// readCgroupValue reads a cgroup file of the process, v1 or v2 layout.
func readCgroupValue(t *testing.T, pid int, controller, v1File, v2File string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var path string
		switch {
		case parts[1] == controller:
			path = filepath.Join("/sys/fs/cgroup", controller, parts[2], v1File)
		case parts[0] == "0" && parts[1] == "":
			path = filepath.Join("/sys/fs/cgroup", parts[2], v2File)
		default:
			continue
		}
		v, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(v))
	}
	t.Fatalf("no %s cgroup for pid %d", controller, pid)
	return ""
}

func TestDeleteRunningContainerStopsItAndItsMonitor(t *testing.T) {
	e := newTestEnv(t)
	e.run("d", containerOpts{args: []string{"sleep", "1000"}})
	proc, err := monitor.ReadProcess(filepath.Join(e.stateDir, "d", monitor.PidFile))
	if err != nil {
		t.Fatal(err)
	}
	pid := e.state("d").Pid
	if err := e.rt.Delete(ctx(t), "d"); err != nil {
		t.Fatal(err)
	}
	if proc.Alive() {
		t.Error("monitor survived Delete")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("container process %d survived Delete", pid)
	}
	if _, err := os.Stat(filepath.Join(e.stateDir, "d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state dir after Delete: %v", err)
	}
	if err := e.rt.Delete(ctx(t), "d"); status.Code(err) != codes.NotFound {
		t.Errorf("second Delete: %v", err)
	}
}

func TestExecCancelKillsTheProcessInTheContainer(t *testing.T) {
	e := newTestEnv(t)
	e.run("ec", containerOpts{args: []string{"sleep", "1000"}})
	c, cancel := context.WithCancel(context.Background())
	var out testio.SyncBuffer
	done := make(chan error, 1)
	go func() {
		_, err := e.rt.Exec(c, "ec", ExecOptions{
			Process: &specs.Process{Args: []string{"sh", "-c", "echo started; exec sleep 999"}, Cwd: "/", Env: []string{"PATH=/bin"}},
			Stdout:  &out,
		})
		done <- err
	}()
	wait.Until(t, time.Minute, "the exec to start", func() bool { return strings.Contains(out.String(), "started") })
	cancel()
	<-done
	// Only the container's own sleep 1000 may remain, right after Exec
	// returned: not even a zombie of the killed process.
	var ps testio.SyncBuffer
	if _, err := e.rt.Exec(ctx(t), "ec", ExecOptions{
		Process: &specs.Process{Args: []string{"sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"}, Cwd: "/", Env: []string{"PATH=/bin"}},
		Stdout:  &ps,
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ps.String(), "sleep 999 ") {
		t.Errorf("the cancelled exec's process survived: %q", ps.String())
	}
}
