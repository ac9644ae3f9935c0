package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/images"
)

// runcRun is the sample key of `runc run --detach` timed alone.
const runcRun = "RuncRun"

// runcFloor times `runc run --detach` alone, n times, on the very bundle
// berth runtime writes for critest's benchmark container (its image and
// command, in a pod like critest's): the part of CreateContainer +
// StartContainer that is the OCI runtime's, which no change to berth can
// make shorter. Each run gets a fresh ID and cgroup and is deleted,
// untimed, before the next.
func runcFloor(ctx context.Context, t *target, n int) ([]time.Duration, error) {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return nil, err
	}
	bundle, remove, err := benchmarkBundle(ctx, t)
	if err != nil {
		return nil, err
	}
	defer remove()
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return nil, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", bundle, err)
	}
	root := filepath.Join(t.Dir, "runc-floor")
	parent := path.Dir(spec.Linux.CgroupsPath)
	out := make([]time.Duration, 0, n)
	for i := range n {
		id := fmt.Sprintf("runc-floor-%d", i)
		dir := filepath.Join(root, "bundles", id)
		spec.Linux.CgroupsPath = path.Join(parent, id)
		if err := writeBundle(dir, &spec); err != nil {
			return nil, err
		}
		// The container's stdio is /dev/null: a pipe would be held open by it.
		log := filepath.Join(root, id+".log")
		runcArgs := func(args ...string) *exec.Cmd {
			return exec.CommandContext(ctx, runc, append([]string{"--root", filepath.Join(root, "state"), "--log", log}, args...)...)
		}
		start := time.Now()
		if err := runcArgs("run", "--detach", "--bundle", dir, id).Run(); err != nil {
			msg, _ := os.ReadFile(log)
			return nil, fmt.Errorf("runc run %s: %w: %s", id, err, msg)
		}
		out = append(out, time.Since(start))
		if err := runcArgs("delete", "--force", id).Run(); err != nil {
			msg, _ := os.ReadFile(log)
			return nil, fmt.Errorf("runc delete %s: %w: %s", id, err, msg)
		}
	}
	return out, nil
}

// benchmarkBundle creates (without starting) critest's benchmark container
// in a pod like critest's, through CRI, and returns the bundle berth wrote
// and a function that removes the pod.
func benchmarkBundle(ctx context.Context, t *target) (string, func(), error) {
	rt := t.Client.Runtime
	img := &runtimeapi.ImageSpec{Image: images.CritestDefaultImage}
	if _, err := t.Client.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: img}); err != nil {
		return "", nil, fmt.Errorf("pull %s: %w", img.Image, err)
	}
	config := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "runc-floor", Namespace: "bench-cri", Uid: "runc-floor-uid"},
		Linux:    &runtimeapi.LinuxPodSandboxConfig{},
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config})
	if err != nil {
		return "", nil, fmt.Errorf("RunPodSandbox: %w", err)
	}
	remove := func() {
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil {
			t.Logger.Warn("remove the runc-floor pod", "err", err)
		}
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId, SandboxConfig: config,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "top"}, Image: img,
			Command: []string{"top"}, Linux: &runtimeapi.LinuxContainerConfig{},
		},
	})
	if err != nil {
		remove()
		return "", nil, fmt.Errorf("CreateContainer: %w", err)
	}
	// berth runtime's state directory (see crirun.berthRuntimeArgs).
	bundle := filepath.Join(t.Dir, "state", "bundles", c.ContainerId)
	if _, err := os.Stat(filepath.Join(bundle, "config.json")); err != nil {
		remove()
		return "", nil, fmt.Errorf("the created container's bundle: %w", err)
	}
	return bundle, remove, nil
}

func writeBundle(dir string, spec *specs.Spec) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600)
}
