package main

import (
	"context"
	"fmt"
	"log/slog"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/bench/internal/crirun"
)

// Each runtime gets a bridge and subnet used by no other test or program in
// the repository (bench/cri uses bcribench0/1 and 10.236-237.0.0/24).
var networks = map[string]crirun.Network{
	"berth":      {Name: "podstartup-berth", Bridge: "bpsbench0", Subnet: "10.238.0.0/24"},
	"containerd": {Name: "podstartup-containerd", Bridge: "bpsbench1", Subnet: "10.238.1.0/24"},
}

// startRuntime starts kind ("berth" or "containerd") in dir (its log beside
// it, dir.log), resolving the mirrored registries to registryHost, and
// pulls the pod and pause images so that no measured pod waits for a pull.
func startRuntime(ctx context.Context, logger *slog.Logger, kind, berth, dir, registryHost string) (*crirun.Runtime, error) {
	r, err := crirun.Start(ctx, crirun.Options{
		Kind: kind, Name: kind, Berth: berth, Dir: dir, LogPath: dir + ".log", Network: networks[kind],
		RegistryHost: registryHost, MirroredHosts: mirroredRegistries, SandboxImage: pauseImage, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	if err := pull(ctx, r, podImage, pauseImage); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func pull(ctx context.Context, r *crirun.Runtime, refs ...string) error {
	for _, ref := range refs {
		_, err := r.Client.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil {
			return fmt.Errorf("%s: pull %s: %w", r.Name, ref, err)
		}
	}
	return nil
}
