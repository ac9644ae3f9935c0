package sibling

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// execHelperEnv makes the test binary, run again by TestExecIsTheCompanion,
// exec the companion instead of running tests.
const execHelperEnv = "BERTH_SIBLING_EXEC_HELPER"

func TestMain(m *testing.M) {
	if name := os.Getenv(execHelperEnv); name != "" {
		err := Exec(name, os.Args[1:])
		// Reached only if Exec failed.
		os.Stderr.WriteString("exec failed: " + err.Error() + "\n")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// TestExecIsTheCompanion: the companion beside the executable runs in the
// caller's process (same PID), with the caller's arguments, stdin, stdout
// and environment, and its exit code is the caller's.
func TestExecIsTheCompanion(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const name = "berth-sibling-exec-test"
	companion := filepath.Join(filepath.Dir(self), name)
	script := "#!/bin/sh\necho \"pid=$$ args=$* env=$BERTH_SIBLING_EXEC_PROBE\"\nread line\necho \"stdin=$line\"\nexit 7\n"
	if err := os.WriteFile(companion, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(companion) })

	cmd := exec.Command(self, "agent", "--node-name", "a b")
	cmd.Env = append(os.Environ(), execHelperEnv+"="+name, "BERTH_SIBLING_EXEC_PROBE=passed")
	cmd.Stdin = strings.NewReader("hello\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("exit: %v, want the companion's exit code 7\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	want := "pid=" + strconv.Itoa(cmd.Process.Pid) + " args=agent --node-name a b env=passed\nstdin=hello\n"
	if string(out) != want {
		t.Errorf("companion's output:\n%s\nwant:\n%s", out, want)
	}
}

func TestExecOfAMissingCompanionIsAnError(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Exec("berth-no-such-companion", nil)
	if err == nil || !strings.Contains(err.Error(), "berth-no-such-companion") {
		t.Fatalf("Exec of a missing companion: %v", err)
	}
}
