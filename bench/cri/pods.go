package main

import (
	"context"
	"fmt"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/images"
)

// loaded is what one runtime holds with n pods running.
type loaded struct {
	daemon  memory
	helpers memory // all its monitors or shims together
	count   int    // how many monitors or shims
	pods    int
}

// runPods starts n pods through CRI, each with one busybox `sleep`
// container, and measures the daemon and its helpers while they run. The
// pods are left for the target's clean-up.
func runPods(ctx context.Context, t *target, n int) (loaded, error) {
	rt := t.Client.Runtime
	img := &runtimeapi.ImageSpec{Image: images.CritestDefaultImage}
	if _, err := t.Client.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: img}); err != nil {
		return loaded{}, fmt.Errorf("%s: pull %s: %w", t.Name, img.Image, err)
	}
	for i := range n {
		name := fmt.Sprintf("bench-%d", i)
		config := &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "bench-cri", Uid: name + "-uid"},
			Hostname:     name,
			LogDirectory: filepath.Join(t.Dir, "logs", name),
			Linux:        &runtimeapi.LinuxPodSandboxConfig{},
		}
		sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config})
		if err != nil {
			return loaded{}, fmt.Errorf("%s: RunPodSandbox %s: %w", t.Name, name, err)
		}
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId: sb.PodSandboxId, SandboxConfig: config,
			Config: &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"}, Image: img,
				Command: []string{"sleep", "3600"}, LogPath: "sleep.log", Linux: &runtimeapi.LinuxContainerConfig{},
			},
		})
		if err != nil {
			return loaded{}, fmt.Errorf("%s: CreateContainer in %s: %w", t.Name, name, err)
		}
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
			return loaded{}, fmt.Errorf("%s: StartContainer in %s: %w", t.Name, name, err)
		}
	}
	if err := checkRunning(ctx, rt, n); err != nil {
		return loaded{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	daemon, err := readMemory(t.Proc.Pid())
	if err != nil {
		return loaded{}, err
	}
	pids := helperProcesses(t.helper, t.Dir)
	helpers, err := sumMemory(pids)
	if err != nil {
		return loaded{}, err
	}
	return loaded{daemon: daemon, helpers: helpers, count: len(pids), pods: n}, nil
}

// checkRunning confirms that the runtime reports n running containers, so
// the figures are of pods that really run.
func checkRunning(ctx context.Context, rt runtimeapi.RuntimeServiceClient, n int) error {
	list, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	if err != nil {
		return err
	}
	if len(list.Containers) != n {
		return fmt.Errorf("%d containers running, want %d", len(list.Containers), n)
	}
	return nil
}
