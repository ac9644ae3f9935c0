package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/cri"
	"github.com/berth/berth/internal/testkit/wait"
)

// runtimeReadyTimeout is how long a runtime may take to answer CRI.
const runtimeReadyTimeout = 2 * time.Minute

// removePods deletes every pod the local node may still run (none after a
// passing test), so that its agent does not start again what is removed
// next, then removes every sandbox its runtime still has: containers
// outlive the server by design, and their addresses on the shared pod
// bridge would answer for the next test's pods.
func (s *Server) removePods(t testing.TB) {
	if s.Process != nil && !s.Running() {
		return // the test stopped it, and its node with it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if s.Admin != nil {
		if err := deleteAllPods(ctx, s); err != nil {
			t.Logf("clean-up: %v", err)
		}
	}
	if err := RemoveSandboxes(ctx, s.RuntimeEndpoint); err != nil {
		t.Logf("clean-up: %v", err)
	}
}

func deleteAllPods(ctx context.Context, s *Server) error {
	namespaces, err := s.Admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	var errs []error
	for _, ns := range namespaces.Items {
		err := s.Admin.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete pods in %s: %w", ns.Name, err))
		}
	}
	return errors.Join(errs...)
}

// RemoveSandboxes stops and removes every pod sandbox the runtime at
// endpoint holds.
func RemoveSandboxes(ctx context.Context, endpoint string) error {
	rt, _, err := cri.Dial(ctx, endpoint)
	if err != nil {
		return fmt.Errorf("runtime gone before its pods were removed: %w", err)
	}
	defer rt.Close()
	list, err := rt.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	var errs []error
	for _, sb := range list.GetItems() {
		if _, err := rt.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", sb.Id, err))
			continue
		}
		if _, err := rt.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.Id, err))
		}
	}
	return errors.Join(errs...)
}

// StartRuntime runs `bin args...` (a `berth runtime`, in network namespace
// netns unless it is empty) with its log at logPath, and waits until it
// answers CRI Version at endpoint. It is stopped when the test ends.
func StartRuntime(t testing.TB, bin, logPath, netns, endpoint string, args ...string) *Process {
	t.Helper()
	var p *Process
	t.Cleanup(func() { stopAtCleanup(t, p) })
	p = startRuntime(t, bin, logPath, netns, endpoint, args...)
	return p
}

// startRuntime is StartRuntime whose caller stops the runtime.
func startRuntime(t testing.TB, bin, logPath, netns, endpoint string, args ...string) *Process {
	t.Helper()
	p := startProcess(t, "runtime", logPath, netns, bin, args...)
	err := wait.Poll(t.Context(), runtimeReadyTimeout, "the runtime at "+endpoint+" to answer CRI", func(ctx context.Context) error {
		if err := p.errExited(); err != nil {
			t.Fatalf("%v\n%s", err, p.Tail())
		}
		c, _, err := cri.Dial(ctx, endpoint)
		if err != nil {
			return err
		}
		return c.Close()
	})
	if err != nil {
		_ = p.Stop(syscall.SIGKILL)
		t.Fatalf("%v\n%s", err, p.Tail())
	}
	return p
}

// NodeOptions say what node to join to a cluster.
type NodeOptions struct {
	// Name is the node's name; Dir holds its runtime, agent and logs.
	Name, Dir string
	// Servers are the API servers' URLs, comma-separated; Token a join
	// token of the cluster's.
	Servers, Token string
	// NodeIP is --node-ip; NetNS the network namespace both run in
	// (empty: the test's).
	NodeIP, NetNS string
	// RuntimeArgs and AgentArgs are more flags for each.
	RuntimeArgs, AgentArgs []string
}

// Node is a `berth runtime` and a `berth agent` joined to a cluster with a
// token; either can be restarted. When the test ends the agent is stopped
// (alive, it would start the sandboxes of its pods again), its pods are
// removed through CRI, then the runtime is stopped.
type Node struct {
	Runtime, Agent *Process
	// Endpoint is the runtime's CRI endpoint; AgentDir the agent's data directory.
	Endpoint, AgentDir string
	bin                string
	opts               NodeOptions
	starts             int
}

// StartNode starts the runtime, waits until it answers, then starts the agent.
func StartNode(t testing.TB, bin string, opts NodeOptions) *Node {
	t.Helper()
	n := &Node{bin: bin, opts: opts, Endpoint: "unix://" + filepath.Join(opts.Dir, "runtime.sock"), AgentDir: filepath.Join(opts.Dir, "agent")}
	t.Cleanup(func() {
		stopAtCleanup(t, n.Agent)
		if n.Runtime == nil {
			return
		}
		if err := RemoveSandboxes(context.Background(), n.Endpoint); err != nil {
			t.Error(err)
		}
		stopAtCleanup(t, n.Runtime)
	})
	n.StartRuntime(t)
	n.StartAgent(t)
	return n
}

// StartRuntime starts the node's runtime (again) and waits until it answers.
func (n *Node) StartRuntime(t testing.TB) {
	t.Helper()
	n.starts++
	args := append([]string{"runtime", "--root", filepath.Join(n.opts.Dir, "runtime"),
		"--state-dir", filepath.Join(n.opts.Dir, "runtime-state"), "--listen", n.Endpoint, "--disable-nri"}, n.opts.RuntimeArgs...)
	n.Runtime = startRuntime(t, n.bin, n.logPath("runtime"), n.opts.NetNS, n.Endpoint, args...)
	n.Runtime.Name = n.opts.Name + "-runtime"
}

// StartAgent starts the node's agent (again).
func (n *Node) StartAgent(t testing.TB) {
	t.Helper()
	n.starts++
	args := append([]string{"agent", "--server", n.opts.Servers, "--token", n.opts.Token,
		"--node-name", n.opts.Name, "--node-ip", n.opts.NodeIP, "--data-dir", n.AgentDir,
		"--runtime-endpoint", n.Endpoint, "--proxy-mode", "none", "--eviction-hard=" + EvictionHard}, n.opts.AgentArgs...)
	n.Agent = startProcess(t, n.opts.Name+"-agent", n.logPath("agent"), n.opts.NetNS, n.bin, args...)
}

func (n *Node) logPath(what string) string {
	return filepath.Join(n.opts.Dir, fmt.Sprintf("%s-%d.log", what, n.starts))
}
