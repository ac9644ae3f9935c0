package server

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

// A single-node cluster from `berth server` alone: it supervises its own
// runtime and agent, the node turns Ready, and a pod from a loopback
// registry runs and is deleted gracefully.
func TestSingleNodeClusterRunsAPod(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.CNIPlugins, hostcheck.BusyboxStatic, hostcheck.Overlayfs, hostcheck.Gcc)
	ctx := context.Background()
	// Start waits for the node to be Ready.
	srv := cluster.Start(t, berthBin, cluster.Options{LocalNode: "e2e-node",
		Args: []string{"--token-auth-file", staticTokenFile(t), "--runtime-handler", runtimeHandler}})
	cs := srv.Admin

	grace := int64(5)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "main", Image: images.Busybox,
			Command: []string{"sh", "-c", "echo hello-from-berth; exec sleep 3600"}}},
	}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *corev1.Pod
	wait.UntilCtx(t, 3*time.Minute, "pod hello Running and Ready", func(ctx context.Context) error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return err
		}
		running = p
		if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
			return nil
		}
		return fmt.Errorf("status %+v", p.Status)
	})
	if running.Spec.NodeName != "e2e-node" || running.Status.PodIP == "" || running.Status.HostIP != "127.0.0.1" || running.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("running pod: node=%q ip=%q hostIP=%q status=%+v", running.Spec.NodeName, running.Status.PodIP, running.Status.HostIP, running.Status.ContainerStatuses)
	}

	// Logs, exec, attach and port-forward: kubectl → API server → the
	// agent's node server → CRI streaming.
	checkPodStreams(t, srv, "hello")
	checkPreviousLogs(t, cs, srv)
	checkServiceAccountToken(t, srv, "hello")
	checkEtcHosts(t, srv, "hello", running.Status.PodIP)
	checkStaticToken(t, srv)
	checkAcceptanceWorkload(t, cs, srv)
	checkOwnUsersPod(t, cs, srv)
	checkImageVolumePod(t, cs, srv)
	checkRuntimeClassPods(t, cs)
	checkWorkloads(t, cs)

	if err := cs.CoreV1().Pods("default").Delete(ctx, "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilCtx(t, 2*time.Minute, "deleted pod hello to go away", func(ctx context.Context) error {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get: %v", err)
	})

	// SIGTERM: a clean exit, stopping the local node, then the control
	// loops, then the API, then the store.
	if err := srv.Stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	assertShutdownOrder(t, srv.Log(), "shutdown: local node stopped", "shutdown: control loops stopped",
		"shutdown: API server stopped", "shutdown: store closed")
}
