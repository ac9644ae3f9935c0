package critestcheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/wait"
)

// containerd is a containerd process started for one test, in an IPC
// namespace of its own so that segments critest's HostIpc specs create
// vanish with it instead of piling up on the host.
type containerd struct {
	cmd    *exec.Cmd
	socket string
}

// bridgeName and subnet are used only by this test's CNI network; the
// traffic stays between the host and network namespaces containerd creates.
const (
	bridgeName = "berthtk-cri0"
	subnet     = "10.239.8.0/24"
)

func containerdConfig(dir, registryHost string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  # Without CAP_SYS_RESOURCE a negative oom_score_adj is refused.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[5]q
    conf_dir = %[6]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "containerd.sock.ttrpc"), hostcheck.CNIBinDir(), filepath.Join(dir, "cni"))
	for _, host := range []string{"gcr.io", "registry.k8s.io", "k8s.gcr.io", "public.ecr.aws"} {
		fmt.Fprintf(&b, "  [plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.%q]\n    endpoint = [\"http://%s\"]\n", host, registryHost)
	}
	return b.String()
}

func cniConfig(dir string) string {
	return fmt.Sprintf(`{"cniVersion":"1.0.0","name":"berth-critestcheck","plugins":[
 {"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,"hairpinMode":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":%q}]],"dataDir":%q}},
 {"type":"portmap","capabilities":{"portMappings":true}},
 {"type":"loopback"}]}`, bridgeName, subnet, filepath.Join(dir, "ipam"))
}

// startContainerd runs containerd with its state under dir, mirroring
// critest's registries to registryHost, and waits until CRI answers.
func startContainerd(t *testing.T, dir, registryHost, crictl string) *containerd {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "cni"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(dir, registryHost)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cni", "10-critestcheck.conflist"), []byte(cniConfig(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	c := &containerd{socket: filepath.Join(dir, "containerd.sock")}
	c.cmd = exec.Command("containerd", "--config", cfg)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWIPC, Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	t.Cleanup(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		_ = c.cmd.Wait()
		logFile.Close()
		_ = exec.Command("ip", "link", "del", bridgeName).Run()
	})
	err = wait.Poll(t.Context(), 90*time.Second, "containerd to answer CRI Version", func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, crictl, "--runtime-endpoint", c.endpoint(), "version").CombinedOutput()
		if err != nil {
			return fmt.Errorf("crictl version: %w: %s", err, out)
		}
		return nil
	})
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
		t.Fatalf("%v; log:\n%s", err, tail(log))
	}
	return c
}

func (c *containerd) endpoint() string { return "unix://" + c.socket }

// ipcNamespace is the path a command joins (nsenter --ipc) to share
// containerd's IPC namespace, as critest's HostIpc specs require.
func (c *containerd) ipcNamespace() string {
	return fmt.Sprintf("/proc/%d/ns/ipc", c.cmd.Process.Pid)
}

func tail(b []byte) string {
	const n = 4000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}
