// Package cri starts a private containerd 1.6 (Debian's
// /usr/bin/containerd) with its CRI plugin for the agent's tests: its own
// root, state and socket, runc, the host's CNI plugins with a loopback-only
// bridge network, and images served from the in-process test registry
// through containerd's registry host configuration (hosts.toml). The agent is thereby tested against a real,
// upstream CRI runtime, as the design requires.
package cri

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	agentcri "github.com/berth/berth/internal/agent/cri"
	"github.com/berth/berth/internal/agent/podcgroup"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/registry"
	"github.com/berth/berth/internal/testkit/wait"
)

// RegistryHost is the registry name the test images are pulled under; the
// containerd config maps it to the in-process registry on 127.0.0.1.
const RegistryHost = "registry.berth.test"

// Image returns the pullable name of a testkit image (images.Busybox, ...).
func Image(ref string) string { return RegistryHost + "/" + ref }

// RuntimeRequirements are the host prerequisites of any test runtime here
// or in runtimetest: runc, the CNI plugins, overlayfs, and what building
// the test images takes.
var RuntimeRequirements = []hostcheck.Requirement{
	hostcheck.Root, hostcheck.Runc, hostcheck.CNIPlugins,
	hostcheck.BusyboxStatic, hostcheck.Gcc, hostcheck.Overlayfs,
}

// Requirements are the host prerequisites of Start.
var Requirements = slices.Concat(RuntimeRequirements, []hostcheck.Requirement{hostcheck.Containerd})

// Conn is a test runtime's CRI endpoint and the client connected to it.
type Conn struct {
	Endpoint string // unix:///...
	Client   *agentcri.Client
	Version  *runtimeapi.VersionResponse
}

// Containerd is one running containerd.
type Containerd struct {
	Conn
	dir     string
	config  string
	logFile *os.File
	cmd     *exec.Cmd
	exited  chan error
}

// Start runs a containerd for the life of t and connects to it. At cleanup
// every pod sandbox is stopped and removed (so CNI releases its addresses and
// the shims exit) before containerd is stopped.
func Start(t testing.TB) *Containerd {
	t.Helper()
	hostcheck.Require(t, Requirements...)
	regHost := ServeImages(t)

	// A short directory of our own: unix socket paths are limited to 108
	// bytes and t.TempDir() names can be long.
	dir, err := os.MkdirTemp("", "berth-ctd-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Containerd{Conn: Conn{Endpoint: "unix://" + filepath.Join(dir, "containerd.sock")}, dir: dir}
	if c.config, err = writeConfig(dir, regHost); err != nil {
		t.Fatal(err)
	}
	if c.logFile, err = os.Create(filepath.Join(dir, "containerd.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		RemoveAllSandboxes(t, c.Client)
		if c.Client != nil {
			c.Client.Close()
		}
		c.stop()
		c.logFile.Close()
		if t.Failed() {
			if data, err := os.ReadFile(c.logFile.Name()); err == nil {
				t.Logf("containerd log (tail):\n%s", tail(string(data), 40))
			}
		}
		UnmountUnder(dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("remove %s: %v", dir, err)
		}
	})
	c.start(t)
	c.Conn = Connect(t, c.describe(), c.Endpoint, c.exited)
	return c
}

// Connect dials endpoint until the runtime there answers CRI Version,
// failing t when the runtime exits first (exited yields; the error is put
// back for its owner) or a minute passes. what names the runtime in
// failures. berth runtime's test starter connects with it too.
func Connect(t testing.TB, what, endpoint string, exited chan error) Conn {
	t.Helper()
	var conn Conn
	wait.UntilCtx(t, time.Minute, what+" to answer CRI Version", func(ctx context.Context) error {
		failIfExited(t, what, exited)
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		client, v, err := agentcri.Dial(dctx, endpoint)
		conn = Conn{Endpoint: endpoint, Client: client, Version: v}
		return err
	})
	return conn
}

// start launches the containerd process.
func (c *Containerd) start(t testing.TB) {
	cmd := exec.Command("containerd", "--config", c.config)
	cmd.Stdout, cmd.Stderr = c.logFile, c.logFile
	// Its own process group, so a ^C of the test does not reach it before cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	c.cmd, c.exited = cmd, make(chan error, 1)
	go func() { c.exited <- cmd.Wait() }()
}

// stop ends the containerd process; the shims and their containers live on.
func (c *Containerd) stop() {
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	c.cmd = nil
}

// failIfExited fails t when the runtime has exited (exited yields; the
// error is put back for its owner).
func failIfExited(t testing.TB, what string, exited chan error) {
	t.Helper()
	select {
	case err := <-exited:
		exited <- err
		t.Fatalf("%s exited: %v", what, err)
	default:
	}
}

// describe names this containerd, and where its log is, in failures.
func (c *Containerd) describe() string { return "containerd (log " + c.logFile.Name() + ")" }

// Restart stops containerd and starts it again on the same directories,
// as an upgrade would; the existing Client reconnects to the same socket.
func (c *Containerd) Restart(t testing.TB) {
	t.Helper()
	c.stop()
	c.start(t)
	wait.UntilCtx(t, time.Minute, c.describe()+" to answer CRI Version after its restart", func(ctx context.Context) error {
		failIfExited(t, c.describe(), c.exited)
		vctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := c.Client.Runtime.Version(vctx, &runtimeapi.VersionRequest{})
		return err
	})
}

// ServeImages serves the testkit's image catalogue from an in-process
// registry for the life of t and returns its host:port. A runtime that maps
// RegistryHost to it pulls the images as Image(ref); berth runtime's test
// starter (internal/runtime/runtimetest) serves them the same way, so tests
// name images identically on both runtimes.
func ServeImages(t testing.TB) string {
	t.Helper()
	set, err := images.Catalogue(t.Context(), images.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host := registry.Start(t)
	registry.Push(t, host, set)
	return host
}

// RemoveAllSandboxes stops and removes every pod sandbox client's runtime
// holds (so CNI releases its addresses and the shims or monitors exit), and
// then the pods' cgroups, which runtimes never remove (the agent does when
// a pod is deleted, but tests end with pods running); a test runtime's
// cleanup calls it before stopping the runtime. A nil client (the runtime
// never answered) is nothing to do.
func RemoveAllSandboxes(t testing.TB, client *agentcri.Client) {
	if client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := client.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Logf("cleanup: list sandboxes: %v", err)
		return
	}
	for _, s := range list.Items {
		if _, err := client.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			t.Logf("cleanup: stop sandbox %s: %v", s.Id, err)
		}
		if _, err := client.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			t.Logf("cleanup: remove sandbox %s: %v", s.Id, err)
		}
	}
	cgroups := podcgroup.NewCleaner(podcgroup.HostOS{}, nil)
	for _, s := range list.Items {
		if _, err := cgroups.RemovePod(types.UID(s.GetMetadata().GetUid())); err != nil {
			t.Logf("cleanup: %v", err)
		}
	}
}

// UnmountUnder lazily unmounts whatever containerd left mounted below dir
// (deepest first), so the directory can be removed.
func UnmountUnder(dir string) {
	points := MountsUnder(dir)
	for i := len(points) - 1; i >= 0; i-- {
		_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}

// MountsUnder lists the mount points below dir, in mount order.
func MountsUnder(dir string) []string {
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return !strings.HasPrefix(m.Mountpoint, dir+"/"), false
	})
	if err != nil {
		return nil
	}
	points := make([]string, len(mounts))
	for i, m := range mounts {
		points[i] = m.Mountpoint
	}
	return points
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// cniSubnet is the bridge network's address range: private, only on this
// host (no masquerading, so nothing leaves it).
const cniSubnet = "10.231.0.0/24"

func writeConfig(dir, regHost string) (string, error) {
	confDir := filepath.Join(dir, "cni-conf")
	if err := WriteBridgeNetwork(confDir, filepath.Join(dir, "cni-ipam"), "berthagt0", cniSubnet); err != nil {
		return "", err
	}
	// The registry host's hosts.toml names the loopback registry as its
	// server, so containerd never falls back to resolving RegistryHost
	// itself (an inline mirror would, and a missing image would then wait
	// for DNS to time out).
	hostsDir := filepath.Join(dir, "certs.d")
	if err := WriteRegistryHosts(hostsDir, regHost, RegistryHost); err != nil {
		return "", err
	}
	cfg := Config{Dir: dir, SandboxImage: Image(images.Pause), CNIBinDir: "/usr/lib/cni", CNIConfDir: confDir, RegistryHostsDir: hostsDir}.TOML()
	path := filepath.Join(dir, "config.toml")
	return path, os.WriteFile(path, []byte(cfg), 0o644)
}

// WriteBridgeNetwork writes into confDir the CNI network of a test
// runtime: a bridge of its own with host-local addresses from subnet (kept
// under ipamDir), no masquerading (so nothing leaves the host), and port
// mappings.
func WriteBridgeNetwork(confDir, ipamDir, bridge, subnet string) error {
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "berth-agent-test",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, bridge, ipamDir, subnet)
	return os.WriteFile(filepath.Join(confDir, "10-berth-agent-test.conflist"), []byte(conflist), 0o644)
}

// WriteRegistryHosts points each of hosts at the registry on registryHost
// over plain HTTP, as containerd's hosts.toml files under hostsDir (the
// registry config_path). The registry is each host's server, not a mirror,
// so containerd never resolves the host itself. The CRI benchmarks use it
// too, to configure their containerd like this one.
func WriteRegistryHosts(hostsDir, registryHost string, hosts ...string) error {
	for _, host := range hosts {
		if err := os.MkdirAll(filepath.Join(hostsDir, host), 0o755); err != nil {
			return err
		}
		toml := fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", registryHost, registryHost)
		if err := os.WriteFile(filepath.Join(hostsDir, host, "hosts.toml"), []byte(toml), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Config is a containerd 1.6 CRI configuration with its root, state and
// socket under Dir, runc as the only runtime and overlayfs as the only
// snapshotter. The CRI benchmarks render theirs with it too, so that the
// containerd they measure is configured like the one the agent is tested on.
type Config struct {
	Dir              string
	SandboxImage     string
	CNIBinDir        string
	CNIConfDir       string
	RegistryHostsDir string // registry config_path (hosts.toml files)
	// BesideOthers also puts the ttrpc socket, network namespaces and runc's
	// root under Dir, for a containerd that must touch nothing another
	// containerd on the host uses.
	BesideOthers bool
}

// TOML renders c as config.toml. restrict_oom_score_adj: the test hosts
// refuse negative oom_score_adj.
func (c Config) TOML() string {
	var b strings.Builder
	fmt.Fprintf(&b, `version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %q
`, filepath.Join(c.Dir, "root"), filepath.Join(c.Dir, "state"), filepath.Join(c.Dir, "containerd.sock"))
	if c.BesideOthers {
		fmt.Fprintf(&b, "[ttrpc]\n  address = %q\n", filepath.Join(c.Dir, "containerd.sock.ttrpc"))
	}
	fmt.Fprintf(&b, `
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
`, c.SandboxImage)
	if c.BesideOthers {
		b.WriteString("  netns_mounts_under_state_dir = true\n")
	}
	b.WriteString(`  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "runc"
`)
	if c.BesideOthers {
		fmt.Fprintf(&b, "        Root = %q\n", filepath.Join(c.Dir, "runc"))
	}
	fmt.Fprintf(&b, `  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, c.CNIBinDir, c.CNIConfDir, c.RegistryHostsDir)
	return b.String()
}

// Pull pulls ref (a name in the test registry, see Image) through the
// runtime's image service and returns the reference the runtime knows it
// by, failing t when the pull fails.
func (c Conn) Pull(t testing.TB, ref string) string {
	t.Helper()
	image := Image(ref)
	if _, err := c.Client.Images.PullImage(t.Context(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
		t.Fatalf("pull %s: %v", image, err)
	}
	return image
}
