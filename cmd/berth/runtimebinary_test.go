package main

import (
	"context"
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berth/berth/internal/agent/cri"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/proc"
)

// TestRuntimeIsItsOwnExecutable: `berth runtime` execs berth-runtime, which
// was built without the multicall binary's API server, etcd and kubectl, in
// its own place (same PID, same flags and errors).
func TestRuntimeIsItsOwnExecutable(t *testing.T) {
	bin := buildBerth(t)
	lean := filepath.Join(filepath.Dir(bin), "berth-runtime")

	t.Run("berth-runtime links none of the server, etcd or kubectl", func(t *testing.T) {
		info, err := buildinfo.ReadFile(lean)
		if err != nil {
			t.Fatal(err)
		}
		var forbidden []string
		for _, heavy := range []string{"k8s.io/kubectl", "k8s.io/apiserver", "go.etcd.io/etcd/server/v3", "k8s.io/cli-runtime"} {
			if dependsOn(info, heavy) {
				forbidden = append(forbidden, heavy)
			}
		}
		if len(forbidden) > 0 {
			t.Errorf("berth-runtime depends on %v", forbidden)
		}
		// The multicall binary has them: the check above looks at real names.
		full, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if !dependsOn(full, "k8s.io/kubectl") {
			t.Error("berth itself does not list k8s.io/kubectl: the module names above are wrong")
		}
	})

	t.Run("a bad runtime flag is one line from berth", func(t *testing.T) {
		out, err := exec.Command(bin, "runtime", "--registry-mirror", "nohost").CombinedOutput()
		if err == nil {
			t.Fatal("exit status 0")
		}
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "berth: --registry-mirror") {
			t.Errorf("want one line starting with \"berth: --registry-mirror\", got:\n%s", out)
		}
	})

	t.Run("berth runtime serves CRI as berth-runtime", func(t *testing.T) {
		hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.Overlayfs)
		dir := t.TempDir()
		endpoint := "unix://" + filepath.Join(dir, "cri.sock")
		p := startRuntime(t, bin, filepath.Join(dir, "runtime.log"), endpoint,
			"--log-level", "debug", "runtime", "--root", filepath.Join(dir, "root"), "--state-dir", filepath.Join(dir, "state"),
			"--listen", endpoint, "--cni-conf-dir", filepath.Join(dir, "cni"), "--disable-nri")
		defer p.Stop(syscall.SIGKILL)
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.Cmd.Process.Pid), "exe"))
		if err != nil {
			t.Fatal(err)
		}
		if exe != lean {
			t.Errorf("the process berth runtime started runs %s, want %s", exe, lean)
		}
		p.Stop(syscall.SIGTERM)
		if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("exit status %d after SIGTERM", code)
		}
		log, _ := os.ReadFile(filepath.Join(dir, "runtime.log"))
		if !strings.Contains(string(log), "level=DEBUG") {
			t.Errorf("--log-level before the subcommand did not reach berth-runtime:\n%s", log)
		}
	})
}

func dependsOn(info *buildinfo.BuildInfo, module string) bool {
	for _, dep := range info.Deps {
		if dep.Path == module {
			return true
		}
	}
	return false
}

// startRuntime runs `bin args...` (a `berth runtime`) and waits until it
// answers CRI at endpoint. The caller stops it.
func startRuntime(t *testing.T, bin, logPath, endpoint string, args ...string) *proc.Process {
	t.Helper()
	p := proc.Start(t, bin, logPath, args...)
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, _, err := cri.Dial(ctx, endpoint)
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	})
	if err != nil {
		p.Stop(syscall.SIGKILL)
		log, _ := os.ReadFile(logPath)
		t.Fatalf("runtime at %s never answered:\n%s", endpoint, log)
	}
	return p
}
