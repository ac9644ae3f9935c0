package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

// envPlugin is a real NRI plugin that injects an environment variable into
// every container.
type envPlugin struct{}

func (envPlugin) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("FROM_NRI", "injected")
	return adj, nil, nil
}

// TestNRIPluginAdjustsRealContainer connects an NRI plugin to a running
// berth runtime and checks its adjustment reaches the process runc starts.
func TestNRIPluginAdjustsRealContainer(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	p, err := stub.New(envPlugin{}, stub.WithPluginName("env"), stub.WithPluginIdx("00"), stub.WithSocketPath(e.cfg.NRISocket))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); err != nil {
		t.Fatalf("plugin did not connect to %s: %v", e.cfg.NRISocket, err)
	}
	defer p.Stop()
	if _, err := e.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: images.Busybox}}); err != nil {
		t.Fatalf("PullImage: %v", err)
	}
	sb := e.runSandbox("web")
	// The container's own process records its environment; exec'd
	// processes get theirs separately.
	id := e.runContainer(sb, "app", "sh", "-c", "env > /env.tmp && mv /env.tmp /env.out; exec sleep 100000")
	var env []byte
	wait.UntilCtx(t, time.Minute, "the container to write /env.out", func(ctx context.Context) error {
		resp, err := e.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"cat", "/env.out"}, Timeout: 30})
		if err != nil {
			return err
		}
		if resp.ExitCode != 0 {
			return fmt.Errorf("cat exited %d: %s", resp.ExitCode, resp.Stderr)
		}
		env = resp.Stdout
		return nil
	})
	if !strings.Contains(string(env), "FROM_NRI=injected") {
		t.Errorf("the plugin's variable is not in the container's environment:\n%s", env)
	}
}
