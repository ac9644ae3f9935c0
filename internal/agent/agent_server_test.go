package agent

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/ports"
	"github.com/berth/berth/internal/testkit/proc"
	"github.com/berth/berth/internal/testkit/wait"
)

// process is one berth subcommand running for a test.
type process struct{ *proc.Process }

func startBerth(t *testing.T, bin, logName string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), logName)
	p := &process{proc.Start(t, bin, logPath, args...)}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("%s (tail):\n%s", logName, tailLines(string(data), 30))
		}
	})
	return p
}

// stop ends the process with SIGTERM (a clean shutdown).
func (p *process) stop() { p.Stop(syscall.SIGTERM) }

// kill ends the process with SIGKILL: no cleanup of any kind.
func (p *process) kill() { p.Stop(syscall.SIGKILL) }

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// buildBerth builds cmd/berth into a temporary directory, with
// berth-agent beside it, which `berth agent` execs.
func buildBerth(t *testing.T) string {
	t.Helper()
	root, err := hostcheck.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "berth")
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/berth", "./cmd/berth-agent")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build berth: %v\n%s", err, out)
	}
	return bin
}

// TestAgentProcessWithBerthServer runs `berth server` and `berth agent`
// as processes over containerd: the scheduler binds a pod to the agent's
// node, the agent runs it; after a kill -9 and a restart of the agent no
// container restarts; a graceful delete stops the pod and removes it.
func TestAgentProcessWithBerthServer(t *testing.T) {
	ctd := cri.Start(t)
	bin := buildBerth(t)
	dataDir := t.TempDir()
	port := ports.Free(t)
	startBerth(t, bin, "server.log", "server", "--data-dir", filepath.Join(dataDir, "server"),
		"--bind-address", "127.0.0.1", "--port", strconv.Itoa(port), "--disable-agent")
	kubeconfig := filepath.Join(dataDir, "server", "admin.kubeconfig")
	client := waitForServer(t, kubeconfig)

	agentArgs := []string{"agent", "--kubeconfig", kubeconfig, "--node-name", "node-e2e",
		"--data-dir", filepath.Join(dataDir, "agent"), "--runtime-endpoint", ctd.Endpoint, "--proxy-mode", "none",
		// No disk pressure on a nearly full CI disk, as the test clusters' nodes.
		"--eviction-hard", cluster.EvictionHard}
	agent := startBerth(t, bin, "agent-1.log", agentArgs...)
	wait.UntilTrue(t, 2*time.Minute, "node registered and Ready", func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "node-e2e", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})

	grace := int64(3) // httpd as PID 1 ignores SIGTERM: the grace period runs out
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{{
			Name: "web", Image: cri.Image(images.Httpd),
		}}},
	}
	created, err := client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := waitRunning(t, client, "web")
	if running.Spec.NodeName != "node-e2e" {
		t.Fatalf("pod bound to %q", running.Spec.NodeName)
	}
	idBefore := running.Status.ContainerStatuses[0].ContainerID

	agent.kill()
	startBerth(t, bin, "agent-2.log", agentArgs...)
	// A second pod running shows the new agent is at work; by then it has
	// long synced the first pod, which must be untouched.
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: cri.Image(images.Busybox), Command: []string{"sleep", "3600"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, client, "second")
	after, err := client.CoreV1().Pods("default").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := after.Status.ContainerStatuses[0]; cs.ContainerID != idBefore || cs.RestartCount != 0 || cs.State.Running == nil {
		t.Fatalf("after the agent's kill -9 and restart: %+v (was %s)", cs, idBefore)
	}
	list, err := ctd.Client.Runtime.ListContainers(t.Context(), &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(created.UID)}},
	})
	if err != nil || len(list.Containers) != 1 || list.Containers[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("runtime holds %v, %v; want the one running container", list, err)
	}

	if err := client.CoreV1().Pods("default").Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 2*time.Minute, "pod deleted by the agent after stopping it", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	sbs, err := ctd.Client.Runtime.ListPodSandbox(t.Context(), &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(created.UID)}},
	})
	if err != nil || len(sbs.Items) != 0 {
		t.Fatalf("deleted pod's sandbox still in the runtime: %v, %v", sbs, err)
	}
}

func waitForServer(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	var client kubernetes.Interface
	wait.UntilTrue(t, 2*time.Minute, "the server to serve the API", func(ctx context.Context) (bool, error) {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil
		}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return false, nil
		}
		if _, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		client = c
		return true, nil
	})
	return client
}

func waitRunning(t *testing.T, client kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	wait.UntilTrue(t, 2*time.Minute, name+" Running and Ready", func(ctx context.Context) (bool, error) {
		var err error
		p, err = client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	return p
}
