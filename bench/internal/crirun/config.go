package crirun

import (
	"fmt"
	"os"
	"path/filepath"

	testcri "github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/hostcheck"
)

// Network is a runtime's private CNI bridge network. Each runtime of each
// bench gets a bridge and subnet used by no other test or program in the
// repository, so runs never meet one another's leftovers.
type Network struct {
	Name, Bridge, Subnet string
}

// WriteCNIConfig writes n (a bridge with host-local addresses, no
// masquerading, portmap) as the only conflist in dir/net.d, and returns
// that directory.
func WriteCNIConfig(dir string, n Network) (string, error) {
	confDir := filepath.Join(dir, "net.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return "", err
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[
 {"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":%q}]],"dataDir":%q}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}
`, n.Name, n.Bridge, n.Subnet, filepath.Join(dir, "ipam"))
	return confDir, os.WriteFile(filepath.Join(confDir, "10-"+n.Name+".conflist"), []byte(conf), 0o644)
}

// writeContainerdConfig configures Debian's containerd 1.6 like the berth
// runtime beside it: everything under dir (root, state, sockets, runc's
// root, network namespaces), so a run touches nothing another containerd
// uses; runc; the host's CNI plugins with the network in confDir; and the
// mirrored registries served by the loopback registry (hosts.toml, so
// nothing is resolved elsewhere).
func writeContainerdConfig(dir, confDir, sandboxImage, registryHost string, mirrored []string) (string, error) {
	hostsDir := filepath.Join(dir, "certs.d")
	if err := testcri.WriteRegistryHosts(hostsDir, registryHost, mirrored...); err != nil {
		return "", err
	}
	config := testcri.Config{
		Dir: dir, SandboxImage: sandboxImage, CNIBinDir: hostcheck.CNIBinDir(), CNIConfDir: confDir,
		RegistryHostsDir: hostsDir, BesideOthers: true,
	}
	path := filepath.Join(dir, "config.toml")
	return path, os.WriteFile(path, []byte(config.TOML()), 0o644)
}
