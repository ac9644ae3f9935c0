package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/berth/berth/bench/internal/crirun"
	"github.com/berth/berth/internal/testkit/images"
)

// target is one CRI runtime under measurement, started fresh for a round
// with everything it writes under its Dir.
type target struct {
	*crirun.Runtime
	helper string // process name (comm) of its per-pod or per-container helper
}

// Each runtime gets a bridge and subnet of its own, used by no other test
// or program in the repository; helper names its monitor or shim.
var targets = map[string]struct {
	name, helper string
	network      crirun.Network
}{
	"berth":      {"berth runtime", "berth-monitor", crirun.Network{Name: "berth-bench", Bridge: "bcribench0", Subnet: "10.236.0.0/24"}},
	"containerd": {"containerd", "containerd-shim", crirun.Network{Name: "containerd-bench", Bridge: "bcribench1", Subnet: "10.237.0.0/24"}},
}

// startTarget runs kind ("berth": `berth runtime`, or Debian's containerd
// 1.6) in dir with critest's registries served by the loopback registry,
// both with the same runc and CNI plugins, and each daemon logging at its
// default level (info) into dir/daemon.log.
func startTarget(ctx context.Context, logger *slog.Logger, kind, berth, dir, registry string) (*target, error) {
	k := targets[kind]
	rt, err := crirun.Start(ctx, crirun.Options{
		Kind: kind, Name: k.name, Berth: berth, Dir: dir, LogPath: filepath.Join(dir, "daemon.log"), Network: k.network,
		RegistryHost: registry, MirroredHosts: images.CritestRegistryHosts, SandboxImage: "registry.k8s.io/pause:3.9", Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	return &target{Runtime: rt, helper: k.helper}, nil
}

// close tears the runtime down and removes its directory.
func (t *target) close() {
	t.Close()
	if err := os.RemoveAll(t.Dir); err != nil {
		t.Logger.Warn("clean-up", "runtime", t.Name, "err", err)
	}
}
