package density

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/cri"
	testcri "github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/ports"
	"github.com/berth/berth/internal/testkit/proc"
	"github.com/berth/berth/internal/testkit/registry"
)

// nodeName is the local node of the test's `berth server`.
const nodeName = "density-node"

// cluster is one `berth server` with its local runtime and agent, its
// images served by an in-process registry on loopback.
type cluster struct {
	client          *kubernetes.Clientset
	kubeconfig      string // the admin kubeconfig
	runtimeEndpoint string
	logPath         string
}

// startCluster pushes the pause and busybox images to a loopback registry
// (mirrored for registry.k8s.io and docker.io), starts the server in a
// scratch data directory and waits until its node is Ready. At clean-up
// every pod sandbox left behind is removed through CRI before the server
// stops, because containers outlive the server by design.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	host := registry.StartWithPodImages(t)

	// Short paths of our own: unix socket paths are limited to 108 bytes, and
	// the runtime's overlay mounts must be undone before the removal.
	dir, err := os.MkdirTemp("", "berth-density-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		testcri.UnmountUnder(dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("remove %s: %v", dir, err)
		}
	})
	dataDir, socketDir := filepath.Join(dir, "data"), filepath.Join(dir, "run")
	c := &cluster{
		kubeconfig:      filepath.Join(dataDir, "admin.kubeconfig"),
		runtimeEndpoint: "unix://" + filepath.Join(socketDir, "runtime.sock"),
		logPath:         filepath.Join(dir, "server.log"),
	}
	srv := proc.Start(t, berthBin, c.logPath, "server",
		"--data-dir", dataDir, "--bind-address", "127.0.0.1", "--port", strconv.Itoa(ports.Free(t)),
		"--node-name", nodeName, "--socket-dir", socketDir,
		"--insecure-registry", host,
		"--registry-mirror", "registry.k8s.io=http://"+host,
		"--registry-mirror", "docker.io=http://"+host,
		// The API server reaches the agent on loopback only.
		"--agent-port", "0", "--node-ip", "127.0.0.1")
	t.Cleanup(func() {
		c.deleteAllPodsNow(t)
		c.removeAllSandboxes(t)
		srv.Stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("server log (tail):\n%s", c.logTail())
		}
	})
	c.client = waitForClient(t, c.kubeconfig)
	c.waitForNodeReady(t)
	return c
}

// waitForClient returns a client once the admin kubeconfig exists and the
// server answers with it.
func waitForClient(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	var cs *kubernetes.Clientset
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil
		}
		// Creating and listing 100 pods is not meant to wait on client-go's
		// default rate limit (5 requests/s).
		cfg.QPS, cfg.Burst = 100, 200
		if cs, err = kubernetes.NewForConfig(cfg); err != nil {
			return false, err
		}
		_, err = cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("server never answered: %v", err)
	}
	return cs
}

func (c *cluster) waitForNodeReady(t *testing.T) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s never Ready: %v\n%s", nodeName, err, c.logTail())
	}
}

// kubectl runs `berth kubectl ARGS` with default flags (the admin
// kubeconfig through KUBECONFIG) and returns its output; it fails the test
// if kubectl fails.
func (c *cluster) kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), berthBin, append([]string{"kubectl"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig, "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("berth kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// runtimeClient connects to the local runtime's CRI socket, closed at clean-up.
func (c *cluster) runtimeClient(t *testing.T) *cri.Client {
	t.Helper()
	client, _, err := cri.Dial(t.Context(), c.runtimeEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// deleteAllPodsNow removes any pod objects left (a failed test), so the
// agent does not start again what removeAllSandboxes removes.
func (c *cluster) deleteAllPodsNow(t *testing.T) {
	if c.client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.client.CoreV1().Pods(metav1.NamespaceDefault).DeleteCollection(ctx,
		metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
	if err != nil {
		t.Logf("clean-up: delete pods: %v", err)
	}
}

// removeAllSandboxes stops and removes whatever pod sandboxes the runtime
// still has (none after a passing test).
func (c *cluster) removeAllSandboxes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, _, err := cri.Dial(ctx, c.runtimeEndpoint)
	if err != nil {
		t.Logf("clean-up: %v", err)
		return
	}
	defer client.Close()
	list, err := client.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Logf("clean-up: list sandboxes: %v", err)
		return
	}
	for _, sb := range list.Items {
		if _, err := client.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			t.Logf("clean-up: stop sandbox %s: %v", sb.Id, err)
		}
		if _, err := client.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			t.Logf("clean-up: remove sandbox %s: %v", sb.Id, err)
		}
	}
}

// logTail is the end of the server's log (it includes the runtime's and
// the agent's output), for failure messages.
func (c *cluster) logTail() string {
	data, err := os.ReadFile(c.logPath)
	if err != nil {
		return err.Error()
	}
	const max = 8000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(data)
}
