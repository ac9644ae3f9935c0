package runtimetest

import (
	"context"
	"os"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

var monitor string

func TestMain(m *testing.M) { Main(m, &monitor) }

// TestStartRunsAContainerAndCleansUp: the runtime answers CRI as berth,
// pulls a test image under the containerd test kit's (internal/testkit/cri) name, runs a container in a
// host-network sandbox; at cleanup the sandbox goes, nothing stays mounted
// and the runtime's directory is removed.
func TestStartRunsAContainerAndCleansUp(t *testing.T) {
	var dir string
	t.Run("runtime", func(t *testing.T) {
		r := Start(t, monitor)
		dir = r.Dir
		if r.Version.RuntimeName != "berth" || r.Version.RuntimeApiVersion != "v1" {
			t.Fatalf("Version = %+v, want berth speaking v1", r.Version)
		}
		runSleeper(t, r)
	})
	if dir == "" {
		// The runtime never started (its subtest skipped or failed): there
		// is nothing to have cleaned up, and "" would match every mount.
		t.Skip("no runtime started")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("runtime directory %s after cleanup: %v", dir, err)
	}
	if left := cri.MountsUnder(dir); len(left) > 0 {
		t.Errorf("mounts left after cleanup: %v", left)
	}
}

// runSleeper runs a sleeping busybox in a host-network sandbox and waits
// until the runtime reports it running.
func runSleeper(t *testing.T, r *Runtime) {
	ctx := t.Context()
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "uid-p"},
		LogDirectory: t.TempDir(),
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
	sb, err := r.Client.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	image := r.Pull(t, images.Busybox)
	c, err := r.Client.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: sbCfg,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"}, Image: &runtimeapi.ImageSpec{Image: image},
			Command: []string{"sleep", "3600"}, LogPath: "sleep.log"}})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := r.Client.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	err = wait.PollTrue(ctx, time.Minute, "the container to report running", func(ctx context.Context) (bool, error) {
		st, err := r.Client.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId})
		return err == nil && st.Status.State == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
