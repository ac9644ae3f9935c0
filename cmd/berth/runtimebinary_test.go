package main

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/hostcheck"
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
		// berth-kubectl has them: the check above looks at real names.
		kubectl, err := buildinfo.ReadFile(filepath.Join(filepath.Dir(bin), "berth-kubectl"))
		if err != nil {
			t.Fatal(err)
		}
		if !dependsOn(kubectl, "k8s.io/kubectl") {
			t.Error("berth-kubectl does not list k8s.io/kubectl: the module names above are wrong")
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
		p := cluster.StartRuntime(t, bin, filepath.Join(dir, "runtime.log"), "", endpoint,
			"--log-level", "debug", "runtime", "--root", filepath.Join(dir, "root"), "--state-dir", filepath.Join(dir, "state"),
			"--listen", endpoint, "--cni-conf-dir", filepath.Join(dir, "cni"), "--disable-nri")
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.Pid()), "exe"))
		if err != nil {
			t.Fatal(err)
		}
		if exe != lean {
			t.Errorf("the process berth runtime started runs %s, want %s", exe, lean)
		}
		if err := p.Stop(syscall.SIGTERM); err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
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
