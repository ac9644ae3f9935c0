package etcd_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/berth/berth/internal/store/etcd"
)

// crashChildEnv makes the test binary act as the writer that gets killed.
const crashChildEnv = "BERTH_ETCD_CRASH_CHILD_DIR"

// TestEmbeddedKeepsAcknowledgedWritesAcrossKill9 runs a child process that
// writes keys to an embedded member and acknowledges each one after the
// store returned; the child is SIGKILLed mid-stream, and every acknowledged
// key must be there when the data directory is reopened.
func TestEmbeddedKeepsAcknowledgedWritesAcrossKill9(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	const acksBeforeKill = 150
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEmbeddedKeepsAcknowledgedWritesAcrossKill9$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	// The child must not outlive a failed test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lastAck := -1
	sc := bufio.NewScanner(out)
	for sc.Scan() && lastAck+1 < acksBeforeKill {
		if n, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
			i, err := strconv.Atoi(n)
			if err != nil || i != lastAck+1 {
				t.Fatalf("child acknowledged %q after %d", sc.Text(), lastAck)
			}
			lastAck = i
		}
	}
	// The child is still writing: kill it without warning.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	if lastAck+1 < acksBeforeKill {
		t.Fatalf("child stopped after %d acknowledgements", lastAck+1)
	}

	s, err := etcd.Embedded(context.Background(), dir, nil)
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer s.Close()
	for i := 0; i <= lastAck; i++ {
		kv, err := s.Get(context.Background(), crashKey(i))
		if err != nil {
			t.Fatalf("acknowledged key %d of %d lost: %v", i, lastAck+1, err)
		}
		if string(kv.Value) != strconv.Itoa(i) {
			t.Fatalf("key %d holds %q", i, kv.Value)
		}
	}
}

func crashKey(i int) string { return fmt.Sprintf("/registry/crash/%06d", i) }

// crashChild writes keys until it is killed (or, as a backstop, until a
// bound), printing "ack N" once key N is stored.
func crashChild(dir string) {
	s, err := etcd.Embedded(context.Background(), dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := 0; i < 1_000_000; i++ {
		if _, err := s.Create(context.Background(), crashKey(i), []byte(strconv.Itoa(i))); err != nil {
			fmt.Fprintln(os.Stderr, "child write:", err)
			os.Exit(2)
		}
		fmt.Fprintf(w, "ack %d\n", i)
		w.Flush()
	}
	os.Exit(3) // never reached in a passing run: the parent kills the child first
}
