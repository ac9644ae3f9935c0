package crirun

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/cri"
	testcri "github.com/berth/berth/internal/testkit/cri"
)

// Runtime is one CRI runtime daemon started fresh for a measurement, with
// everything it writes under Dir.
type Runtime struct {
	Name      string   // as logs and errors call it
	Dir       string   // root, state, sockets and CNI config of this runtime
	Endpoint  string   // unix:///...
	Bridge    string   // the CNI bridge of its private network, deleted by Close
	RuncRoots []string // runc --root directories its containers live in
	Logger    *slog.Logger

	Proc    *Process    // set by Launch
	Client  *cri.Client // set once the daemon answers
	Version string      // runtime name and version from CRI Version
}

// Launch starts the daemon, its output in logPath, and waits until it
// answers CRI Version on Endpoint.
func (r *Runtime) Launch(ctx context.Context, logPath, bin string, args ...string) error {
	p, err := StartProcess(r.Name, logPath, bin, args...)
	if err != nil {
		return err
	}
	r.Proc = p
	return p.WaitFor(ctx, 2*time.Minute, func(ctx context.Context) error {
		c, v, err := cri.Dial(ctx, r.Endpoint)
		if err == nil {
			r.Client, r.Version = c, v.RuntimeName+" "+v.RuntimeVersion
		}
		return err
	})
}

// Close removes every pod sandbox through CRI (so CNI releases addresses
// and helpers exit), stops the daemon, then removes whatever is left even
// if the daemon failed: runc containers, helper processes, mounts
// (overlays, network namespaces) and the bridge. Dir itself stays: its
// owner decides whether to keep the logs in it.
func (r *Runtime) Close() {
	if r.Client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := removeAllSandboxes(ctx, r.Client.Runtime); err != nil {
			r.Logger.Warn("clean-up: removing sandboxes", "runtime", r.Name, "err", err)
		}
		cancel()
		r.Client.Close()
	}
	if r.Proc != nil {
		r.Proc.Stop(30 * time.Second)
	}
	for _, root := range r.RuncRoots {
		deleteRuncContainers(root)
	}
	for _, pid := range ProcessesMentioning(r.Dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	testcri.UnmountUnder(r.Dir)
	_ = exec.Command("ip", "link", "del", r.Bridge).Run()
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

// deleteRuncContainers force-deletes every container runc knows under
// root: those of a daemon that died before it could.
func deleteRuncContainers(root string) {
	out, err := exec.Command("runc", "--root", root, "list", "-q").Output()
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(out)) {
		_ = exec.Command("runc", "--root", root, "delete", "--force", id).Run()
	}
}
