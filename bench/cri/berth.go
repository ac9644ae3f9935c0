package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/berth/berth/internal/testkit/images"
)

// Each runtime gets a bridge and subnet of its own, used by no other
// test or program in the repository.
const (
	berthBridge      = "bcribench0"
	berthSubnet      = "10.236.0.0/24"
	containerdBridge = "bcribench1"
	containerdSubnet = "10.237.0.0/24"
)

// startBerth runs `berth runtime` in dir with critest's registries mirrored
// to the loopback registry and NRI served on a private socket (NRI is on by
// default; a private socket keeps it away from other runtimes' plugins).
// Both daemons log at their default level (info) into their directory.
func startBerth(ctx context.Context, logger *slog.Logger, berth, dir, registry string) (*target, error) {
	t := &target{
		name: "berth runtime", dir: dir, endpoint: "unix://" + filepath.Join(dir, "cri.sock"),
		bridge: berthBridge, helper: "berth-monitor", logger: logger,
		runcRoots: []string{filepath.Join(dir, "state", "runc")},
	}
	confDir, err := writeCNIConfig(dir, "berth-bench", berthBridge, berthSubnet)
	if err != nil {
		return t, err
	}
	args := []string{"runtime", "--root", filepath.Join(dir, "root"), "--state-dir", filepath.Join(dir, "state"),
		"--listen", t.endpoint, "--cni-conf-dir", confDir, "--nri-socket", filepath.Join(dir, "nri.sock"),
		"--insecure-registry", registry}
	for _, host := range images.CritestRegistryHosts {
		args = append(args, "--registry-mirror", host+"=http://"+registry)
	}
	return t, t.launch(ctx, berth, args...)
}

// writeCNIConfig writes a bridge network (host-local addresses, no
// masquerading, portmap) as the only conflist in dir/net.d.
func writeCNIConfig(dir, name, bridge, subnet string) (string, error) {
	confDir := filepath.Join(dir, "net.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return "", err
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[
 {"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":%q}]],"dataDir":%q}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}
`, name, bridge, subnet, filepath.Join(dir, "ipam"))
	return confDir, os.WriteFile(filepath.Join(confDir, "10-"+name+".conflist"), []byte(conf), 0o644)
}
