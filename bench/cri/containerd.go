package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
)

// startContainerd runs Debian's containerd 1.6 in dir with its CRI plugin
// configured like berth runtime: runc (with its own --root), the host's CNI
// plugins with a private bridge, critest's registries served by the
// loopback registry (hosts.toml, so nothing is ever resolved elsewhere).
func startContainerd(ctx context.Context, logger *slog.Logger, dir, registry string) (*target, error) {
	t := &target{
		name: "containerd", dir: dir, endpoint: "unix://" + filepath.Join(dir, "containerd.sock"),
		bridge: containerdBridge, helper: "containerd-shim", logger: logger,
		runcRoots: []string{filepath.Join(dir, "runc", "k8s.io")},
	}
	confDir, err := writeCNIConfig(dir, "containerd-bench", containerdBridge, containerdSubnet)
	if err != nil {
		return t, err
	}
	hostsDir, err := writeRegistryHosts(dir, registry)
	if err != nil {
		return t, err
	}
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte(containerdConfig(dir, confDir, hostsDir)), 0o644); err != nil {
		return t, err
	}
	return t, t.launch(ctx, "containerd", "--config", config)
}

// writeRegistryHosts points each of critest's registry hosts at the
// loopback registry over plain HTTP.
func writeRegistryHosts(dir, registry string) (string, error) {
	hostsDir := filepath.Join(dir, "certs.d")
	for _, host := range images.CritestRegistryHosts {
		if err := os.MkdirAll(filepath.Join(hostsDir, host), 0o755); err != nil {
			return "", err
		}
		hosts := fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", registry, registry)
		if err := os.WriteFile(filepath.Join(hostsDir, host, "hosts.toml"), []byte(hosts), 0o644); err != nil {
			return "", err
		}
	}
	return hostsDir, nil
}

// containerdConfig: everything under dir (root, state, sockets, runc root,
// network namespaces), so a run touches nothing another containerd uses.
// restrict_oom_score_adj: this host refuses negative oom_score_adj.
func containerdConfig(dir, cniConfDir, hostsDir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %q
[ttrpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "runc"
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "containerd.sock.ttrpc"), filepath.Join(dir, "runc"),
		hostcheck.CNIBinDir(), cniConfDir, hostsDir)
	return b.String()
}
