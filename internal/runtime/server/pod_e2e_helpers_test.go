package server_test

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/runtimetest"
	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

// pod is one sandbox of the e2e tests' real runtime, with the config its
// containers are created with.
type pod struct {
	r   *runtimetest.Runtime
	id  string
	cfg *runtimeapi.PodSandboxConfig
}

func runPod(t *testing.T, r *runtimetest.Runtime, name string, pid runtimeapi.NamespaceMode, sysctls map[string]string) pod {
	t.Helper()
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Hostname:     name + "-host",
		LogDirectory: t.TempDir(),
		Linux: &runtimeapi.LinuxPodSandboxConfig{Sysctls: sysctls, SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: pid},
		}},
	}
	resp, err := r.Client.Runtime.RunPodSandbox(t.Context(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatalf("RunPodSandbox %s: %v", name, err)
	}
	return pod{r: r, id: resp.PodSandboxId, cfg: cfg}
}

// busybox is the config of a busybox container named name running cmd;
// callers add what their test is about.
func busybox(name string, cmd ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image: &runtimeapi.ImageSpec{Image: cri.Image(images.Busybox)}, Command: cmd, LogPath: name + ".log"}
}

// create creates a container of cfg in the pod.
func (p pod) create(t *testing.T, cfg *runtimeapi.ContainerConfig) (string, error) {
	t.Helper()
	c, err := p.r.Client.Runtime.CreateContainer(t.Context(), &runtimeapi.CreateContainerRequest{PodSandboxId: p.id, SandboxConfig: p.cfg, Config: cfg})
	return c.GetContainerId(), err
}

// run creates and starts a container of cfg and waits until it runs.
func (p pod) run(t *testing.T, cfg *runtimeapi.ContainerConfig) string {
	t.Helper()
	id, err := p.create(t, cfg)
	if err != nil {
		t.Fatalf("CreateContainer %s: %v", cfg.Metadata.Name, err)
	}
	p.startAndWait(t, cfg.Metadata.Name, id)
	return id
}

// sleeper starts a sleeping busybox in the pod and waits until it runs.
func (p pod) sleeper(t *testing.T, name string) string {
	t.Helper()
	return p.start(t, name)
}

// start starts a sleeping busybox with mounts in the pod and waits until
// it runs.
func (p pod) start(t *testing.T, name string, mounts ...*runtimeapi.Mount) string {
	t.Helper()
	cfg := busybox(name, "sleep", "3600")
	cfg.Mounts = mounts
	return p.run(t, cfg)
}

// startWithSecurity starts a sleeping busybox with the security context
// sc and waits until it runs.
func (p pod) startWithSecurity(t *testing.T, name string, sc *runtimeapi.LinuxContainerSecurityContext) string {
	t.Helper()
	cfg := busybox(name, "sleep", "3600")
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: sc}
	return p.run(t, cfg)
}

// createWithPid creates a busybox running cmd in the namespaces ns.
func (p pod) createWithPid(t *testing.T, name string, ns *runtimeapi.NamespaceOption, cmd ...string) (string, error) {
	t.Helper()
	cfg := busybox(name, cmd...)
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns}}
	return p.create(t, cfg)
}

func (p pod) startAndWait(t *testing.T, name, id string) {
	t.Helper()
	ctx := t.Context()
	if _, err := p.r.Client.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("StartContainer %s: %v", name, err)
	}
	err := wait.PollTrue(ctx, time.Minute, "container "+name+" to report running", func(ctx context.Context) (bool, error) {
		st, err := p.r.Client.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		return err == nil && st.Status.State == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
