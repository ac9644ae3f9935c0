package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/oci"
	"github.com/berth/berth/internal/testkit/images"
)

// Sample keys of `runc run --detach` timed alone: run from runc's file, as
// containerd runs it, and from a sealed in-memory copy with the monitor's
// environment, as berth runtime runs it (see oci.SealedCopy, oci.MonitorEnv).
const (
	runcRun       = "RuncRun"
	runcRunSealed = "RuncRunSealed"
)

// runcFloor times `runc run --detach` alone, n times each way (from the
// file and from a sealed copy, alternately), each on the bundle berth
// runtime has just written for a new container like critest's benchmark
// one (its image and command, in a pod like critest's), with its own fresh
// root filesystem: the part of CreateContainer + StartContainer that is the
// OCI runtime's, which no change to berth can make shorter. Everything else
// (CreateContainer, the runc delete, RemoveContainer) is left out of the
// timing.
func runcFloor(ctx context.Context, t *target, n int) (map[string][]time.Duration, error) {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return nil, err
	}
	sealed, err := oci.SealedCopy(runc)
	if err != nil {
		return nil, err
	}
	defer sealed.Close()
	type invocation struct {
		binary string
		env    []string // nil: the bench's own
	}
	ways := map[string]invocation{runcRun: {binary: runc}, runcRunSealed: {oci.ExecPath(sealed), oci.MonitorEnv()}}
	rt := t.Client.Runtime
	img := &runtimeapi.ImageSpec{Image: images.CritestDefaultImage}
	if _, err := t.Client.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: img}); err != nil {
		return nil, fmt.Errorf("pull %s: %w", img.Image, err)
	}
	pod := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "runc-floor", Namespace: "bench-cri", Uid: "runc-floor-uid"},
		Linux:    &runtimeapi.LinuxPodSandboxConfig{},
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		return nil, fmt.Errorf("RunPodSandbox: %w", err)
	}
	defer func() {
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil {
			t.Logger.Warn("remove the runc-floor pod", "err", err)
		}
	}()
	root := filepath.Join(t.Dir, "runc-floor")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	out := map[string][]time.Duration{}
	for i := range 2 * n {
		key := runcRun
		if i%2 == 1 {
			key = runcRunSealed
		}
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId: sb.PodSandboxId, SandboxConfig: pod,
			Config: &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "top", Attempt: uint32(i)}, Image: img,
				Command: []string{"top"}, Linux: &runtimeapi.LinuxContainerConfig{},
			},
		})
		if err != nil {
			return nil, fmt.Errorf("CreateContainer: %w", err)
		}
		way := ways[key]
		took, err := timeRuncRun(ctx, way.binary, way.env, root, filepath.Join(t.Dir, "state", "bundles", c.ContainerId), c.ContainerId)
		if err != nil {
			return nil, err
		}
		out[key] = append(out[key], took)
		// Never started through CRI, the container is removed without an
		// OCI runtime call; its root filesystem goes with it.
		if _, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.ContainerId}); err != nil {
			return nil, fmt.Errorf("RemoveContainer: %w", err)
		}
	}
	return out, nil
}

// timeRuncRun times `runc run --detach` of bundle (berth runtime's state
// directory, see crirun's berthRuntimeArgs) with env (nil: this process's)
// under a runc root of its own, then deletes the container, untimed. The
// container's stdio is /dev/null: a pipe would be held open by it.
func timeRuncRun(ctx context.Context, runc string, env []string, root, bundle, id string) (time.Duration, error) {
	log := filepath.Join(root, id+".log")
	cmd := func(args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, runc, append([]string{"--root", filepath.Join(root, "state"), "--log", log}, args...)...)
		c.Env = env
		return c
	}
	start := time.Now()
	if err := cmd("run", "--detach", "--bundle", bundle, id).Run(); err != nil {
		msg, _ := os.ReadFile(log)
		return 0, fmt.Errorf("runc run %s: %w: %s", id, err, msg)
	}
	took := time.Since(start)
	if err := cmd("delete", "--force", id).Run(); err != nil {
		msg, _ := os.ReadFile(log)
		return 0, fmt.Errorf("runc delete %s: %w: %s", id, err, msg)
	}
	return took, nil
}
