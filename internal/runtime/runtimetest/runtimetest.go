// Package runtimetest starts a real `berth runtime` in-process for tests
// (internal/runtime's Run: runc behind berth-monitor, the overlay image
// store, the host's CNI plugins with a loopback-only bridge network of its
// own) and hands out a CRI client, the counterpart of the agent's
// internal/testkit/cri: images come from the same in-process registry under the
// same names (cri.Image), so a test runs unchanged on both.
package runtimetest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/berth/berth/internal/runtime"
	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
)

// Runtime is one running berth runtime.
type Runtime struct {
	cri.Conn
	// Dir holds the runtime's root, state, socket and CNI files; cleanup
	// removes it.
	Dir    string
	cfg    runtime.Config
	cancel context.CancelFunc
	exited chan error
}

// Start runs a berth runtime for the life of t, exec'ing monitor (see Main)
// for each container, and connects to it. At cleanup every pod sandbox is
// stopped and removed (so the monitors exit and nothing stays mounted),
// then the runtime is stopped and its directory removed.
func Start(t testing.TB, monitor string) *Runtime {
	t.Helper()
	hostcheck.Require(t, cri.RuntimeRequirements...)
	if monitor == "" {
		t.Fatal("runtimetest: no berth-monitor binary (call runtimetest.Main from TestMain)")
	}
	regHost := cri.ServeImages(t)

	// A short directory of our own: unix socket paths are limited to 108
	// bytes and t.TempDir() names can be long.
	dir, err := os.MkdirTemp("", "berth-rt-")
	if err != nil {
		t.Fatal(err)
	}
	// Traversable as /var/lib is, so the root of a user-namespaced pod (a
	// host ID of its own) can reach its files below.
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	r := &Runtime{Dir: dir}
	t.Cleanup(func() { r.cleanup(t) })
	cfg, err := config(dir, monitor, regHost)
	if err != nil {
		t.Fatal(err)
	}
	r.cfg = cfg
	r.run(t)
	return r
}

func (r *Runtime) run(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.exited = cancel, make(chan error, 1)
	go func() { r.exited <- runtime.Run(ctx, r.cfg) }()
	r.Conn = cri.Connect(t, "berth runtime", r.cfg.Listen, r.exited)
}

// Restart stops the runtime as SIGTERM does (its containers and monitors
// run on) and starts it again over the same directories, which it recovers.
func (r *Runtime) Restart(t testing.TB) {
	t.Helper()
	r.Client.Close()
	r.cancel()
	if err := <-r.exited; err != nil {
		t.Fatalf("berth runtime: %v", err)
	}
	r.run(t)
}

// config is the runtime's configuration under dir: RegistryHost mapped to
// the loopback registry over plain HTTP (the mirrored host itself is never
// contacted), the pause image under the name containerd's sandbox_image
// has, and no NRI socket (nothing here plugs in, and the default path is
// the host's).
func config(dir, monitor, regHost string) (runtime.Config, error) {
	confDir := filepath.Join(dir, "net.d")
	if err := cri.WriteBridgeNetwork(confDir, filepath.Join(dir, "ipam"), bridgeName(), cniSubnet); err != nil {
		return runtime.Config{}, err
	}
	return runtime.Config{
		Root: filepath.Join(dir, "root"), StateDir: filepath.Join(dir, "state"),
		Listen: "unix://" + filepath.Join(dir, "cri.sock"), MonitorBinary: monitor, CNIConfDir: confDir,
		Mirrors:    map[string][]string{cri.RegistryHost: {"http://" + regHost}},
		Insecure:   []string{regHost},
		PauseImage: cri.Image(images.Pause), DisableNRI: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, nil
}

// cniSubnet is the bridge network's address range, apart from
// the containerd test kit's (internal/testkit/cri) (10.231.0.0/24), so both runtimes can run at once.
const cniSubnet = "10.232.0.0/24"

// bridgeName is per process, so runtimes of concurrent test binaries do
// not share a bridge.
func bridgeName() string { return fmt.Sprintf("berthrt%d", os.Getpid()%100000) }

// cleanup removes every sandbox, stops the runtime, and fails t if the
// runtime left a mount behind or Run ended with an error.
func (r *Runtime) cleanup(t testing.TB) {
	cri.RemoveAllSandboxes(t, r.Client)
	if r.Client != nil {
		r.Client.Close()
	}
	if r.cancel != nil {
		r.cancel()
		if err := <-r.exited; err != nil {
			t.Errorf("berth runtime: %v", err)
		}
	}
	_ = exec.Command("ip", "link", "del", bridgeName()).Run()
	if left := cri.MountsUnder(r.Dir); len(left) > 0 {
		t.Errorf("berth runtime left mounts: %v", left)
		cri.UnmountUnder(r.Dir)
	}
	if err := os.RemoveAll(r.Dir); err != nil {
		t.Logf("remove %s: %v", r.Dir, err)
	}
}
