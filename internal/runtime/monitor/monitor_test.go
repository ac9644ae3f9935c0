package monitor

import (
	"bytes"
	"fmt"
	"github.com/berth/berth/internal/testkit/wait"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fixedClock() time.Time { return time.Date(2026, 11, 29, 23, 0, 0, 123456789, time.UTC) }

func TestLineSplitterWritesCRIRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	l, err := openCRILog(path, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	out := &lineSplitter{log: l, stream: "stdout"}
	errs := &lineSplitter{log: l, stream: "stderr"}
	// Lines arrive in arbitrary chunks; a long line is cut at 16 KiB; an
	// unterminated last line is partial.
	out.Write([]byte("hel"))
	out.Write([]byte("lo\nwor"))
	errs.Write([]byte("bad\n"))
	out.Write([]byte("ld\n" + strings.Repeat("x", maxLogLine+10) + "\nend"))
	out.Flush()
	l.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := "2026-11-29T23:00:00.123456789Z"
	want := strings.Join([]string{
		ts + " stdout F hello",
		ts + " stderr F bad",
		ts + " stdout F world",
		ts + " stdout P " + strings.Repeat("x", maxLogLine),
		ts + " stdout F " + strings.Repeat("x", 10),
		ts + " stdout P end",
	}, "\n") + "\n"
	if string(data) != want {
		t.Errorf("log:\n%.300s\nwant:\n%.300s", data, want)
	}
}

func TestCRILogReopenFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.log")
	l, err := openCRILog(path, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.record("stdout", false, []byte("one"))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	l.record("stdout", false, []byte("two")) // still the renamed file
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	l.record("stdout", false, []byte("three"))
	old, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if !bytes.Contains(old, []byte("one")) || !bytes.Contains(old, []byte("two")) || bytes.Contains(cur, []byte("two")) || !bytes.Contains(cur, []byte("three")) {
		t.Errorf("rotated %q, current %q", old, cur)
	}
}

func TestLifecycleRejectsInvalidTransitions(t *testing.T) {
	var l lifecycle
	l.at = phaseCreating
	for _, step := range []struct {
		to phase
		ok bool
	}{
		{phaseRunning, false}, // must be created first
		{phaseCreated, true},
		{phaseCreated, false},
		{phaseRunning, true},
		{phaseCreated, false},
		{phaseStopped, true},
		{phaseRunning, false}, // stopped is final
	} {
		err := l.to(step.to)
		if (err == nil) != step.ok {
			t.Errorf("to %s from %s: err %v, want ok=%v", step.to, l.get(), err, step.ok)
		}
	}
	if l.get() != phaseStopped {
		t.Errorf("ended %s", l.get())
	}
}

func TestProcessIdentityDetectsPidReuse(t *testing.T) {
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	p, err := ProcessOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pid")
	if err := WriteProcess(path, p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadProcess(path)
	if err != nil || got != p || !got.Alive() {
		t.Fatalf("read back %+v (%v), alive %v", got, err, got.Alive())
	}
	reused := Process{Pid: p.Pid, StartTime: p.StartTime + 1}
	if reused.Alive() {
		t.Error("a process with another start time was taken for the recorded one")
	}
	// Killed but not yet reaped: a zombie is not alive.
	cmd.Process.Kill()
	wait.UntilNil(t, 30*time.Second, fmt.Sprintf("the killed process %d to become a zombie", p.Pid), func() error {
		_, state, err := procStat(p.Pid)
		if err != nil {
			return err
		}
		if state != "Z" {
			return fmt.Errorf("state %s", state)
		}
		return nil
	})
	if p.Alive() {
		t.Error("a zombie is alive")
	}
	cmd.Wait()
	if p.Alive() {
		t.Error("a dead process is alive")
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProcess(path); err == nil {
		t.Error("malformed record accepted")
	}
}

func TestFramesRoundTripAndRejectOversized(t *testing.T) {
	var b bytes.Buffer
	if err := writeFrame(&b, frameStdout, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	kind, p, err := readFrame(&b, nil)
	if err != nil || kind != frameStdout || string(p) != "hello" {
		t.Fatalf("frame %d %q %v", kind, p, err)
	}
	b.Reset()
	b.Write([]byte{frameStdin, 0xff, 0xff, 0xff, 0xff})
	if _, _, err := readFrame(&b, nil); err == nil {
		t.Error("oversized frame accepted")
	}
}

func TestWriteJSONIsAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), ExitFile)
	want := ExitStatus{ExitCode: 3, FinishedAt: fixedClock(), OOMKilled: true}
	if err := WriteJSON(path, want); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temp file left: %v", err)
	}
	got, err := ReadExit(filepath.Dir(path))
	if err != nil || got.ExitCode != 3 || !got.OOMKilled || !got.FinishedAt.Equal(want.FinishedAt) {
		t.Errorf("read back %+v %v", got, err)
	}
}

func TestAwaitStartReadsOneContainerID(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		fails    bool
	}{
		{in: "0123abc", want: "0123abc"},
		{in: ""}, // no container: a spare let go
		{in: "../etc", fails: true},
		{in: "a/b", fails: true},
		{in: "..", fails: true},
		{in: ".", fails: true},
	} {
		got, err := AwaitStart(strings.NewReader(tc.in))
		if (err != nil) != tc.fails || got != tc.want {
			t.Errorf("AwaitStart(%q) = %q, %v; want %q (fails %v)", tc.in, got, err, tc.want, tc.fails)
		}
	}
}
