package main

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/ports"
	"github.com/berth/berth/internal/testkit/registry"
)

// A single-node cluster from `berth server` alone: it supervises its own
// runtime and agent, the node turns Ready, and a pod from a loopback
// registry runs and is deleted gracefully.
func TestSingleNodeClusterRunsAPod(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.CNIPlugins, hostcheck.BusyboxStatic, hostcheck.Overlayfs, hostcheck.Gcc)
	ctx := context.Background()
	host := registry.StartWithPodImages(t)

	dataDir := filepath.Join(t.TempDir(), "data")
	openTempParents(t, dataDir)
	port := ports.Free(t)
	socketDir := filepath.Join(t.TempDir(), "run")
	srv := startServerArgs(t, berthBin, dataDir, port, "--token-auth-file", staticTokenFile(t),
		"--node-name", "e2e-node", "--socket-dir", socketDir,
		"--insecure-registry", host,
		"--registry-mirror", "registry.k8s.io=http://"+host,
		"--registry-mirror", "docker.io=http://"+host,
		// The API server reaches the agent on loopback only.
		"--agent-port", "0", "--node-ip", "127.0.0.1")
	cs := srv.client(t)
	// A failure leaves pods running (a passing run deletes them all through
	// the API): remove them before the server is stopped.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if err := removeRuntimePods(context.Background(), filepath.Join(socketDir, "runtime.sock")); err != nil {
			t.Logf("cleaning up after the failure: %v", err)
		}
	})

	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "e2e-node", metav1.GetOptions{})
		return err == nil && nodeReady(n), nil
	})
	if err != nil {
		t.Fatalf("node never Ready: %v\n%s", err, readLog(dataDir))
	}

	grace := int64(5)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "main", Image: images.Busybox,
			Command: []string{"sh", "-c", "echo hello-from-berth; exec sleep 3600"}}},
	}}
	projectedTokenVolume(pod)
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		running = p
		return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready, nil
	})
	if err != nil {
		t.Fatalf("pod never Running and Ready: %v; last status %+v\n%s", err, running.Status, readLog(dataDir))
	}
	if running.Spec.NodeName != "e2e-node" || running.Status.PodIP == "" || running.Status.HostIP != "127.0.0.1" || running.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("running pod: node=%q ip=%q hostIP=%q status=%+v", running.Spec.NodeName, running.Status.PodIP, running.Status.HostIP, running.Status.ContainerStatuses)
	}

	// Logs, exec, attach and port-forward: kubectl → API server → the
	// agent's node server → CRI streaming.
	checkPodStreams(t, dataDir, "hello")
	checkPreviousLogs(t, cs, dataDir)
	checkServiceAccountToken(t, dataDir, "hello")
	checkStaticToken(t, dataDir)
	checkAcceptanceWorkload(t, cs, dataDir)
	checkOwnUsersPod(t, cs, dataDir)

	if err := cs.CoreV1().Pods("default").Delete(ctx, "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("deleted pod never went away: %v\n%s", err, readLog(dataDir))
	}

	// SIGTERM: a clean exit, stopping the local node, then the control
	// loops, then the API, then the store.
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-srv.exited
	if srv.exitErr != nil {
		t.Fatalf("exit after SIGTERM: %v", srv.exitErr)
	}
	assertShutdownOrder(t, readLog(dataDir), "shutdown: local node stopped", "shutdown: control loops stopped",
		"shutdown: API server stopped", "shutdown: store closed")
}

// assertShutdownOrder checks that the server logged each step, in order.
func assertShutdownOrder(t *testing.T, log string, steps ...string) {
	t.Helper()
	at := strings.LastIndex(log, "shutting down")
	if at < 0 {
		t.Fatalf("no shutdown in the log:\n%s", log)
	}
	for _, step := range steps {
		i := strings.Index(log[at:], step)
		if i < 0 {
			t.Fatalf("shutdown step %q missing or out of order (steps %q)\n%s", step, steps, log[at:])
		}
		at += i
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
