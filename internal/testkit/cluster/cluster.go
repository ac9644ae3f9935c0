// Package cluster starts whole berth clusters for tests: the real `berth
// server` binary as a child process (control plane only, or with its local
// node on berth's runtime, on embedded or external etcd), joined nodes
// (`berth runtime` and `berth agent`), or a server run in the test's own
// process. It waits until each answers, hands out the clients the tests
// need (admin, a user with a client certificate, the join token, berth
// kubectl), and cleans up when the test ends: pods and sandboxes removed,
// processes stopped, mounts under the data directory undone.
package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	testcri "github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/testkit/ports"
	"github.com/berth/berth/internal/testkit/registry"
	"github.com/berth/berth/internal/testkit/wait"
)

// How long a server may take to answer, and its local node to turn Ready.
const (
	readyTimeout     = 3 * time.Minute
	nodeReadyTimeout = 3 * time.Minute
)

// Options say what `berth server` to start.
type Options struct {
	// DataDir is the server's --data-dir. Empty: "data" in a fresh, short
	// directory (unix socket paths are limited to 108 bytes) that is
	// unmounted and removed when the test ends.
	DataDir string
	// BindAddress is --bind-address; empty: 127.0.0.1.
	BindAddress string
	// Port is the API port; 0: a free loopback port.
	Port int
	// LocalNode names the node agent (and runtime) the server runs as its
	// children; its images come from a loopback registry holding the pod
	// images (registry.StartWithPodImages), mirrored for registry.k8s.io
	// and docker.io. Empty: --disable-agent.
	LocalNode string
	// Etcd is an external etcd cluster to store in (--etcd-servers and its
	// client credentials); nil: the embedded member.
	Etcd *etcdtest.Cluster
	// NetNS runs the server inside this network namespace (a name under
	// /run/netns); Dial then reaches it from the test's namespace.
	NetNS string
	Dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	// Args are more server flags.
	Args []string
	// KubectlTimeout bounds each Kubectl run; 0: two minutes.
	KubectlTimeout time.Duration
}

// Server is a running (or stopped) berth server.
type Server struct {
	*Process // nil for a server in the test's process
	// DataDir, Port and URL (https://BIND:PORT) are where it keeps its
	// files and serves.
	DataDir string
	Port    int
	URL     string
	// Kubeconfig is its admin kubeconfig, DATA_DIR/admin.kubeconfig.
	Kubeconfig string
	// RuntimeEndpoint is the local node's CRI endpoint (unix://...), empty
	// with no local node.
	RuntimeEndpoint string
	// Admin is a client with the admin kubeconfig.
	Admin *kubernetes.Clientset

	bin      string
	opts     Options
	inproc   *inProcess
	registry string // host:port of the local node's registry
}

// Start runs `bin server` as opts say, waits until it answers with its admin
// kubeconfig (and, with a local node, until the node is Ready), and stops it
// when the test ends.
func Start(t testing.TB, bin string, opts Options) *Server {
	t.Helper()
	s := &Server{bin: bin, opts: opts, DataDir: opts.DataDir, Port: opts.Port}
	if s.DataDir == "" {
		s.DataDir = filepath.Join(scratchDir(t, opts.LocalNode != ""), "data")
	}
	if s.Port == 0 {
		s.Port = ports.Free(t)
	}
	if opts.BindAddress == "" {
		s.opts.BindAddress = "127.0.0.1"
	}
	s.URL = "https://" + net.JoinHostPort(s.opts.BindAddress, strconv.Itoa(s.Port))
	s.Kubeconfig = filepath.Join(s.DataDir, "admin.kubeconfig")
	if opts.LocalNode != "" {
		s.registry = registry.StartWithPodImages(t)
		s.RuntimeEndpoint = "unix://" + filepath.Join(s.socketDir(), "runtime.sock")
	}
	// Registered after the scratch directory's removal, so it runs before:
	// the local node's pods go while the server still runs, then the server
	// (with the node's processes) stops, then its mounts are undone.
	t.Cleanup(func() {
		if t.Failed() && s.Process != nil {
			t.Logf("server log (tail):\n%s", s.Tail())
		}
		if opts.LocalNode != "" {
			s.removePods(t)
		}
		stopAtCleanup(t, s.Process)
	})
	s.Restart(t)
	return s
}

// Restart starts the server again (it must have exited) on the same data
// directory and port, and waits as Start does; it is stopped when the test ends.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.Process != nil && s.Running() {
		t.Fatalf("restart of %s while it runs", s.Name)
	}
	s.Process = startProcess(t, "server", s.DataDir+".log", s.opts.NetNS, s.bin, s.args()...)
	s.waitReady(t, s.Process.errExited)
}

func (s *Server) args() []string {
	args := []string{"server", "--data-dir", s.DataDir, "--bind-address", s.opts.BindAddress, "--port", strconv.Itoa(s.Port),
		// Several servers share the machine: cluster DNS on a free port each.
		"--cluster-dns-port", "0"}
	if s.opts.LocalNode == "" {
		args = append(args, "--disable-agent")
	} else {
		args = append(args, "--node-name", s.opts.LocalNode, "--socket-dir", s.socketDir(),
			// The API server reaches the agent on loopback only.
			"--agent-port", "0", "--node-ip", "127.0.0.1",
			// Tests share the host's kube-proxy nftables tables: a test that
			// runs the proxier asks for it in Args (which win) and owns the
			// tables (testkit/kubeproxytable).
			"--proxy-mode", "none", "--agent-arg=--eviction-hard="+EvictionHard)
		args = append(args, MirrorFlags(s.registry)...)
	}
	if e := s.opts.Etcd; e != nil {
		args = append(args, "--etcd-servers", strings.Join(e.Endpoints, ","),
			"--etcd-cafile", e.CAFile, "--etcd-certfile", e.CertFile, "--etcd-keyfile", e.KeyFile)
	}
	return append(args, s.opts.Args...)
}

// EvictionHard is the test nodes' --eviction-hard: the defaults without
// nodefs.available, as kind configures its nodes, since test clusters
// share the disk of the machine running them and how full it is is not
// what they test.
const EvictionHard = "memory.available<100Mi,pid.available<10%"

// socketDir holds the local node's runtime socket, beside the data directory.
func (s *Server) socketDir() string { return filepath.Join(filepath.Dir(s.DataDir), "run") }

// MirrorFlags are the runtime (or server) flags that pull from the registry
// at host over plain HTTP, for its own name and as registry.k8s.io's and
// docker.io's mirror.
func MirrorFlags(host string) []string {
	return []string{"--insecure-registry", host,
		"--registry-mirror", "registry.k8s.io=http://" + host,
		"--registry-mirror", "docker.io=http://" + host}
}

// waitReady waits until the admin kubeconfig exists and the server answers
// with it, failing at once if exited reports the server gone; then, with a
// local node, until that node is Ready.
func (s *Server) waitReady(t testing.TB, exited func() error) {
	t.Helper()
	err := wait.Poll(t.Context(), readyTimeout, "the server at "+s.URL+" to answer with "+s.Kubeconfig, func(ctx context.Context) error {
		if err := exited(); err != nil {
			t.Fatalf("waiting for the server at %s: %v\n%s", s.URL, err, s.tail())
		}
		cfg, err := s.restConfigOrErr()
		if err != nil {
			return err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return err
		}
		s.Admin = cs
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, s.tail())
	}
	if s.opts.LocalNode == "" {
		return
	}
	err = wait.Poll(t.Context(), nodeReadyTimeout, "node "+s.opts.LocalNode+" to be Ready", func(ctx context.Context) error {
		n, err := s.Admin.CoreV1().Nodes().Get(ctx, s.opts.LocalNode, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !NodeReady(n) {
			return fmt.Errorf("conditions %+v", n.Status.Conditions)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, s.tail())
	}
}

// tail is the end of the server's log, if it runs as a process.
func (s *Server) tail() string {
	if s.Process == nil {
		return ""
	}
	return s.Tail()
}

// NodeReady reports whether n's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// scratchDir makes a short directory of the test's and removes it when the
// test ends, after undoing the runtime's mounts below it. For a local node
// others may pass through it (0711), as /var/lib lets them above
// /var/lib/berth: the root of a user-namespaced pod is a host user of its
// own and must reach the runtime's files below.
func scratchDir(t testing.TB, forNode bool) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "berth-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		testcri.UnmountUnder(dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("remove %s: %v", dir, err)
		}
	})
	if forNode {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Stop is the Process's Stop for a server in either form: for one in the
// test's process, sig is ignored and its context is cancelled.
func (s *Server) Stop(sig syscall.Signal) error {
	if s.inproc != nil {
		return s.inproc.stop()
	}
	return s.Process.Stop(sig)
}
