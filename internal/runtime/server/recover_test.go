package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berth/berth/internal/runtime/image"
	"github.com/berth/berth/internal/runtime/network"
	"github.com/berth/berth/internal/runtime/oci"
	"github.com/berth/berth/internal/testkit/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRestartRecoversState restarts the server over the same state dir
// while the (fake) monitors live on, with containers in every situation
// recovery must tell apart.
func TestRestartRecoversState(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	running := h.createContainer(sb, sbCfg, "running")
	h.startContainer(running)
	exitsWhileDown := h.createContainer(sb, sbCfg, "exits")
	h.startContainer(exitsWhileDown)
	monitorGone := h.createContainer(sb, sbCfg, "gone")
	h.startContainer(monitorGone)
	created := h.createContainer(sb, sbCfg, "created")
	logPath := h.containerStatus(running).LogPath

	h.stop()
	h.oci.exit(exitsWhileDown, 7)
	_ = h.oci.Delete(ctx, monitorGone) // its monitor was killed
	// A create that crashed before its record was written.
	if _, err := h.oci.RunDetached(ctx, oci.RunOptions{ID: "halfcreated", BundleDir: filepath.Join(h.stateDir, "bundles", "halfcreated"), Spec: &specs.Spec{}}); err != nil {
		t.Fatal(err)
	}
	// A rootfs prepared by a create that crashed before recording its owner.
	if _, err := h.images.PrepareRootfs(ctx, "sha256:ghost", "ghost", image.RootfsOptions{}); err != nil {
		t.Fatal(err)
	}
	// A corrupt state file must not stop the start.
	if err := os.WriteFile(filepath.Join(h.stateDir, "containers", "junk.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.start()

	sst, err := h.client.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
	if err != nil || sst.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY || sst.Status.Network.Ip == "" {
		t.Fatalf("sandbox after restart: %v %v", sst, err)
	}
	if st := h.containerStatus(running); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.LogPath != logPath {
		t.Fatalf("running container after restart: %+v", st)
	}
	if st := h.containerStatus(exitsWhileDown); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 7 || st.Reason != "Error" {
		t.Fatalf("container that exited while down: %+v", st)
	}
	if st := h.containerStatus(monitorGone); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Reason != "Unknown" {
		t.Fatalf("container whose monitor vanished: %+v", st)
	}
	if st := h.containerStatus(created); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Fatalf("created container: %+v", st)
	}
	if _, err := h.oci.State(ctx, "halfcreated"); err == nil {
		t.Fatal("half-created container not cleaned")
	}
	h.images.mu.Lock()
	_, ghost := h.images.rootfs["ghost"]
	owned := len(h.images.rootfs)
	h.images.mu.Unlock()
	if ghost || owned != 5 { // the pause container and four containers
		t.Fatalf("unowned rootfs kept (%v) or owned ones lost (%d left)", ghost, owned)
	}
	if _, err := os.Stat(filepath.Join(h.stateDir, "containers", "junk.json.corrupt")); err != nil {
		t.Fatalf("corrupt file not set aside: %v", err)
	}

	// The recovered running container is watched again: its exit is seen.
	events := h.subscribe(ctx)
	h.oci.exit(running, 0)
	nextEvent(t, events, running, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	if st := h.containerStatus(running); st.ExitCode != 0 || st.Reason != "Completed" {
		t.Fatalf("exit after restart: %+v", st)
	}
	// Names were restored: a clash is still a clash.
	_, err = h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: containerConfig("created")})
	if err == nil {
		t.Fatal("name clash after restart accepted")
	}
	// The created one can still be started.
	h.startContainer(created)
}

func TestRestartMarksSandboxWithDeadPauseNotReady(t *testing.T) {
	h := newHarness(t)
	sb, _ := h.runSandbox("pod")
	h.stop()
	h.oci.exit(sb, 137)
	h.start()
	sst, err := h.client.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
	if err != nil || sst.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("sandbox with dead pause: %v %v", sst, err)
	}
}

func TestSandboxWhosePauseDiesBecomesNotReady(t *testing.T) {
	h := newHarness(t)
	sb, _ := h.runSandbox("pod")
	h.restart() // the watch must also be re-established by recovery
	h.oci.exit(sb, 137)
	// The watcher records the exit asynchronously.
	wait.UntilCtx(t, 30*time.Second, "the sandbox to become not ready after its pause exited", func(ctx context.Context) error {
		sst, err := h.client.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
		if err != nil {
			return err
		}
		if sst.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			return fmt.Errorf("state %v", sst.Status.State)
		}
		return nil
	})
}

// TestLostMonitorIsReportedNotCompleted kills a running container's
// monitor (in the fake): its exit is unknown and must not read as success.
func TestLostMonitorIsReportedNotCompleted(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	events := h.subscribe(ctx)
	sb, sbCfg := h.runSandbox("pod")
	id := h.createContainer(sb, sbCfg, "c")
	h.startContainer(id)
	h.oci.loseMonitor(id)
	nextEvent(t, events, id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	st := h.containerStatus(id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Reason != "Unknown" || st.ExitCode == 0 || st.Message != "monitor is gone" || st.FinishedAt <= 0 {
		t.Fatalf("status after losing the monitor: %+v", st)
	}
	if _, err := h.client.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
}

func TestRestartMarksSandboxWithLostNetNSNotReady(t *testing.T) {
	h := newHarness(t)
	sb, _ := h.runSandbox("pod")
	h.stop()
	// What a reboot or a stray `ip netns delete` leaves: no namespace.
	if err := network.RemoveNetNS(filepath.Join(h.stateDir, "netns", sb)); err != nil {
		t.Fatal(err)
	}
	h.start()
	sst, err := h.client.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
	if err != nil || sst.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("sandbox without its netns: %v %v", sst, err)
	}
}

// Root filesystems no sandbox or container owns are removed at start-up:
// recorded ones, and half-made ones whose image is not even known.
func TestRestartRemovesRootfsesNothingOwns(t *testing.T) {
	h := newHarness(t)
	sb, _ := h.runSandbox("owner")
	h.stop()
	h.images.rootfs["orphan"] = "sha256:gone"
	h.images.halfMade["half"] = true
	h.start()
	h.images.mu.Lock()
	defer h.images.mu.Unlock()
	if _, ok := h.images.rootfs["orphan"]; ok {
		t.Error("a recorded rootfs nothing owns was kept")
	}
	if h.images.halfMade["half"] {
		t.Error("a half-made rootfs nothing owns was kept")
	}
	if _, ok := h.images.rootfs[sb]; !ok {
		t.Error("the sandbox's own rootfs was removed")
	}
}
