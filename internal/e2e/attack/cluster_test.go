package attack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/cri"
	"github.com/berth/berth/internal/pki"
	testcri "github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/ports"
	"github.com/berth/berth/internal/testkit/proc"
	"github.com/berth/berth/internal/testkit/registry"
)

// localNode is the name of the server's own node, where pods run.
const localNode = "attack-local"

// cluster is one `berth server` with its local runtime and agent, its
// images served by an in-process registry on loopback.
type cluster struct {
	t               *testing.T
	dataDir         string
	url             string // https://127.0.0.1:PORT
	adminConfig     *rest.Config
	admin           kubernetes.Interface
	runtimeEndpoint string
	logPath         string
}

// startCluster pushes the pause and busybox images to a loopback registry
// (mirrored for registry.k8s.io and docker.io), starts the server in a
// scratch data directory and waits until its node is Ready. At clean-up
// every pod left is deleted and every sandbox removed through CRI before the
// server stops, because containers outlive the server by design.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	host := registry.StartWithPodImages(t)

	// Short paths of our own: unix socket paths are limited to 108 bytes, and
	// the runtime's overlay mounts must be undone before the removal.
	dir, err := os.MkdirTemp("", "berth-attack-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		testcri.UnmountUnder(dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("remove %s: %v", dir, err)
		}
	})
	port := ports.Free(t)
	socketDir := filepath.Join(dir, "run")
	c := &cluster{
		t:               t,
		dataDir:         filepath.Join(dir, "data"),
		url:             "https://127.0.0.1:" + strconv.Itoa(port),
		runtimeEndpoint: "unix://" + filepath.Join(socketDir, "runtime.sock"),
		logPath:         filepath.Join(dir, "server.log"),
	}
	srv := proc.Start(t, berthBin, c.logPath, "server",
		"--data-dir", c.dataDir, "--bind-address", "127.0.0.1", "--port", strconv.Itoa(port),
		"--node-name", localNode, "--socket-dir", socketDir,
		"--insecure-registry", host,
		"--registry-mirror", "registry.k8s.io=http://"+host,
		"--registry-mirror", "docker.io=http://"+host,
		// The API server reaches the local agent on 127.0.0.1; the joined
		// node of the test reports another loopback address.
		"--agent-port", "0", "--node-ip", "127.0.0.1")
	t.Cleanup(func() {
		c.deleteAllPodsNow()
		c.removeAllSandboxes()
		srv.Stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("server log (tail):\n%s", c.logTail())
		}
	})
	c.waitForAdmin()
	c.waitForNodeReady(localNode)
	return c
}

// poll waits up to timeout for cond, failing the test with what it waited for.
func (c *cluster) poll(t *testing.T, what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, timeout, true, cond)
	if err != nil {
		t.Fatalf("waiting %v for %s: %v", timeout, what, err)
	}
}

// waitForAdmin reads the admin kubeconfig once it exists and the server answers with it.
func (c *cluster) waitForAdmin() {
	kubeconfig := filepath.Join(c.dataDir, "admin.kubeconfig")
	c.poll(c.t, "the server to answer with "+kubeconfig, 3*time.Minute, func(ctx context.Context) (bool, error) {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil
		}
		cfg.Timeout = 30 * time.Second
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return false, err
		}
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		c.adminConfig, c.admin = cfg, cs
		return true, nil
	})
}

func (c *cluster) waitForNodeReady(name string) {
	c.poll(c.t, "node "+name+" to be Ready", 3*time.Minute, func(ctx context.Context) (bool, error) {
		n, err := c.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && nodeReady(n), nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// userClient is a client for a user holding a client certificate the
// cluster's client CA signed for id, as an operator hands out.
func (c *cluster) userClient(id pki.Identity) kubernetes.Interface {
	c.t.Helper()
	clientCA, err := pki.LoadOrCreateCA(filepath.Join(c.dataDir, "pki"), "client-ca")
	if err != nil {
		c.t.Fatal(err)
	}
	certPEM, keyPEM, err := clientCA.Issue(id)
	if err != nil {
		c.t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.adminConfig)
	cfg.CertFile, cfg.KeyFile = "", ""
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return kubernetes.NewForConfigOrDie(cfg)
}

// kubectl runs `berth kubectl` with the admin kubeconfig and returns its
// combined output and whether it succeeded.
func (c *cluster) kubectl(args ...string) (string, bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, berthBin, append([]string{"kubectl", "--kubeconfig", filepath.Join(c.dataDir, "admin.kubeconfig")}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+c.t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// podNames lists the names of the pods in ns, sorted: what a refused
// create must leave as it was.
func (c *cluster) podNames(t *testing.T, ns string) []string {
	t.Helper()
	list, err := c.admin.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// deletePodNow removes a pod the test created (or an attack managed to
// create) without waiting for its node.
func (c *cluster) deletePodNow(ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = c.admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
}

// deleteAllPodsNow removes every pod left in the test's namespaces, so the
// agent does not start again what removeAllSandboxes removes.
func (c *cluster) deleteAllPodsNow() {
	if c.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ns := range []string{metav1.NamespaceDefault, attackNS} {
		err := c.admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
		if err != nil {
			c.t.Logf("clean-up: delete pods in %s: %v", ns, err)
		}
	}
}

// removeAllSandboxes stops and removes whatever pod sandboxes the local
// runtime still has.
func (c *cluster) removeAllSandboxes() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, _, err := cri.Dial(ctx, c.runtimeEndpoint)
	if err != nil {
		c.t.Logf("clean-up: %v", err)
		return
	}
	defer client.Close()
	list, err := client.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		c.t.Logf("clean-up: list sandboxes: %v", err)
		return
	}
	for _, sb := range list.Items {
		if _, err := client.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			c.t.Logf("clean-up: stop sandbox %s: %v", sb.Id, err)
		}
		if _, err := client.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			c.t.Logf("clean-up: remove sandbox %s: %v", sb.Id, err)
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

// describeContainers renders a pod's container statuses for failure messages.
func describeContainers(p *corev1.Pod) string {
	var out []string
	for _, s := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		out = append(out, fmt.Sprintf("%s: %s", s.Name, describeState(s.State)))
	}
	return fmt.Sprintf("phase %s, containers [%s]", p.Status.Phase, strings.Join(out, "; "))
}

func describeState(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return fmt.Sprintf("waiting %s %q", s.Waiting.Reason, s.Waiting.Message)
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.UTC().Format(time.RFC3339)
	case s.Terminated != nil:
		return fmt.Sprintf("terminated exit %d %s %q", s.Terminated.ExitCode, s.Terminated.Reason, s.Terminated.Message)
	}
	return "no state"
}
