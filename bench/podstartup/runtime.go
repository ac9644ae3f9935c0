package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/containerdtest"
	"github.com/berth/berth/internal/agent/cri"
)

// runtimeKinds are the runtimes compared, in report order.
var runtimeKinds = []string{"berth", "containerd"}

// Each runtime gets a bridge and subnet used by no other test or program in
// the repository (bench/cri uses bcribench0/1 and 10.236-237.0.0/24).
var networks = map[string]struct{ bridge, subnet string }{
	"berth":      {"bpsbench0", "10.238.0.0/24"},
	"containerd": {"bpsbench1", "10.238.1.0/24"},
}

// criRuntime is one CRI runtime started fresh for a measurement, with
// everything it writes under dir.
type criRuntime struct {
	kind      string
	dir       string
	endpoint  string   // unix:///...
	runcRoots []string // runc --root directories its containers live in
	proc      *process
	client    *cri.Client
	version   string // runtime name and version from CRI Version
	logger    *slog.Logger
}

// startRuntime starts kind ("berth" or "containerd") in dir (its log beside
// it, dir.log), resolving the mirrored registries to registryHost, and
// pulls the pod and pause images so that no measured pod waits for a pull.
func startRuntime(ctx context.Context, logger *slog.Logger, kind, berth, dir, registryHost string) (*criRuntime, error) {
	r := &criRuntime{kind: kind, dir: dir, logger: logger}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	confDir, err := writeCNIConfig(dir, kind)
	if err != nil {
		return r, err
	}
	var bin string
	var args []string
	switch kind {
	case "berth":
		r.endpoint = "unix://" + filepath.Join(dir, "cri.sock")
		r.runcRoots = []string{filepath.Join(dir, "state", "runc")}
		bin, args = berth, berthRuntimeArgs(dir, r.endpoint, confDir, registryHost)
	case "containerd":
		r.endpoint = "unix://" + filepath.Join(dir, "containerd.sock")
		r.runcRoots = []string{filepath.Join(dir, "runc", "k8s.io")}
		config, err := writeContainerdConfig(dir, confDir, registryHost)
		if err != nil {
			return r, err
		}
		bin, args = "containerd", []string{"--config", config}
	default:
		return r, fmt.Errorf("unknown runtime %q", kind)
	}
	if r.proc, err = startProcess(kind, dir+".log", bin, args...); err != nil {
		return r, err
	}
	err = r.proc.waitFor(ctx, 2*time.Minute, func(ctx context.Context) error {
		c, v, err := cri.Dial(ctx, r.endpoint)
		if err == nil {
			r.client, r.version = c, v.RuntimeName+" "+v.RuntimeVersion
		}
		return err
	})
	if err != nil {
		return r, err
	}
	return r, r.pull(ctx, podImage, pauseImage)
}

// berthRuntimeArgs: `berth runtime` with its own NRI socket (NRI is on by
// default; a private socket keeps it away from other runtimes' plugins).
func berthRuntimeArgs(dir, endpoint, confDir, registryHost string) []string {
	args := []string{"runtime", "--root", filepath.Join(dir, "root"), "--state-dir", filepath.Join(dir, "state"),
		"--listen", endpoint, "--cni-conf-dir", confDir, "--nri-socket", filepath.Join(dir, "nri.sock"),
		"--insecure-registry", registryHost}
	for _, host := range mirroredRegistries {
		args = append(args, "--registry-mirror", host+"=http://"+registryHost)
	}
	return args
}

func (r *criRuntime) pull(ctx context.Context, refs ...string) error {
	for _, ref := range refs {
		_, err := r.client.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil {
			return fmt.Errorf("%s: pull %s: %w", r.kind, ref, err)
		}
	}
	return nil
}

// writeCNIConfig writes kind's bridge network (host-local addresses, no
// masquerading, portmap) as the only conflist in dir/net.d.
func writeCNIConfig(dir, kind string) (string, error) {
	confDir := filepath.Join(dir, "net.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return "", err
	}
	n := networks[kind]
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"podstartup-%s","plugins":[
 {"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":%q}]],"dataDir":%q}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}
`, kind, n.bridge, n.subnet, filepath.Join(dir, "ipam"))
	return confDir, os.WriteFile(filepath.Join(confDir, "10-podstartup.conflist"), []byte(conf), 0o644)
}

// close removes every pod sandbox through CRI (so CNI releases addresses
// and helpers exit), stops the daemon, then removes whatever is left even if
// the daemon failed: runc containers, helper processes, mounts, the bridge
// and dir.
func (r *criRuntime) close() {
	if r.client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := removeAllSandboxes(ctx, r.client.Runtime); err != nil {
			r.logger.Warn("clean-up: removing sandboxes", "runtime", r.kind, "err", err)
		}
		cancel()
		r.client.Close()
	}
	if r.proc != nil {
		r.proc.stop(30 * time.Second)
	}
	for _, root := range r.runcRoots {
		out, _ := exec.Command("runc", "--root", root, "list", "-q").Output()
		for _, id := range strings.Fields(string(out)) {
			_ = exec.Command("runc", "--root", root, "delete", "--force", id).Run()
		}
	}
	for _, pid := range processesMentioning(r.dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	containerdtest.UnmountUnder(r.dir)
	_ = exec.Command("ip", "link", "del", networks[r.kind].bridge).Run()
}

func removeAllSandboxes(ctx context.Context, rt runtimeapi.RuntimeServiceClient) error {
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	var errs []error
	for _, sb := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, err)
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// processesMentioning lists the PIDs whose command line contains dir: the
// runtime's helpers (berth-monitor's container directory,
// containerd-shim's -address socket).
func processesMentioning(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}
