package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/cri"
)

// target is one CRI runtime under measurement, started fresh for a round
// with everything it writes under dir.
type target struct {
	name      string   // as shown in the report
	dir       string   // root, state, socket, CNI config of this runtime
	endpoint  string   // unix:///...
	bridge    string   // the CNI bridge of its private network
	helper    string   // process name (comm) of its per-pod or per-container helper
	runcRoots []string // runc --root directories its containers live in
	proc      *process
	client    *cri.Client
	logger    *slog.Logger
}

// launch starts the daemon and waits until it answers CRI Version.
func (t *target) launch(ctx context.Context, bin string, args ...string) error {
	p, err := startProcess(filepath.Join(t.dir, "daemon.log"), bin, args...)
	if err != nil {
		return err
	}
	t.proc = p
	return p.waitFor(ctx, 2*time.Minute, func(ctx context.Context) error {
		c, _, err := cri.Dial(ctx, t.endpoint)
		if err == nil {
			t.client = c
		}
		return err
	})
}

// close removes every pod sandbox through CRI (so CNI releases its
// addresses and the helpers exit), stops the daemon, and then removes
// whatever is left even if the daemon failed: helper processes, runc
// containers, mounts (overlays, network namespaces), the bridge and dir.
func (t *target) close() {
	if t.client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := removeAllSandboxes(ctx, t.client.Runtime); err != nil {
			t.logger.Warn("clean-up: removing sandboxes", "runtime", t.name, "err", err)
		}
		cancel()
		t.client.Close()
	}
	if t.proc != nil {
		t.proc.stop(30 * time.Second)
	}
	for _, root := range t.runcRoots {
		deleteRuncContainers(root)
	}
	for _, pid := range processesMentioning(t.dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	unmountUnder(t.dir)
	_ = exec.Command("ip", "link", "del", t.bridge).Run()
	if err := os.RemoveAll(t.dir); err != nil {
		t.logger.Warn("clean-up", "runtime", t.name, "err", err)
	}
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

// deleteRuncContainers force-deletes every container runc knows under root.
func deleteRuncContainers(root string) {
	out, err := exec.Command("runc", "--root", root, "list", "-q").Output()
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(out)) {
		_ = exec.Command("runc", "--root", root, "delete", "--force", id).Run()
	}
}

// processesMentioning lists the PIDs whose command line contains dir (the
// daemon's helpers: berth-monitor's container directory,
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

// unmountUnder lazily unmounts every mount point below dir, deepest first.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}
