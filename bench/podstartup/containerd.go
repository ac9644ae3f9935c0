package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// writeContainerdConfig configures Debian's containerd 1.6 like the berth
// runtime beside it: everything under dir (root, state, sockets, runc's
// root, network namespaces), runc, the host's CNI plugins with the network
// in confDir, and the mirrored registries served by the loopback registry
// (hosts.toml, so nothing is resolved elsewhere). restrict_oom_score_adj:
// this host refuses negative oom_score_adj.
func writeContainerdConfig(dir, confDir, registryHost string) (string, error) {
	hostsDir := filepath.Join(dir, "certs.d")
	for _, host := range mirroredRegistries {
		if err := os.MkdirAll(filepath.Join(hostsDir, host), 0o755); err != nil {
			return "", err
		}
		hosts := fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", registryHost, registryHost)
		if err := os.WriteFile(filepath.Join(hostsDir, host, "hosts.toml"), []byte(hosts), 0o644); err != nil {
			return "", err
		}
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %q
[ttrpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
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
		filepath.Join(dir, "containerd.sock.ttrpc"), pauseImage, filepath.Join(dir, "runc"),
		hostcheck.CNIBinDir(), confDir, hostsDir)
	path := filepath.Join(dir, "config.toml")
	return path, os.WriteFile(path, []byte(config), 0o644)
}
