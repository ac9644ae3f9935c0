package crirun

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// Options say which runtime Start runs and how. Both runtimes get the same
// kind of network and the same registries, so that only the runtime differs.
type Options struct {
	Kind    string // "berth" (`berth runtime`) or "containerd"
	Name    string // as logs and errors call it
	Berth   string // the berth binary, for Kind "berth"
	Dir     string // everything the runtime writes goes below it
	LogPath string // the daemon's output
	Network Network
	// RegistryHost (host:port) serves MirroredHosts' images over plain HTTP.
	RegistryHost  string
	MirroredHosts []string
	SandboxImage  string // containerd's sandbox_image (berth has its own default)
	Logger        *slog.Logger
}

// Start runs the runtime o.Kind in o.Dir and waits until it answers CRI.
// If it fails, whatever it did start is torn down (Close) before it returns.
func Start(ctx context.Context, o Options) (*Runtime, error) {
	r := &Runtime{Name: o.Name, Dir: o.Dir, Bridge: o.Network.Bridge, Logger: o.Logger}
	if err := r.start(ctx, o); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Runtime) start(ctx context.Context, o Options) error {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	confDir, err := WriteCNIConfig(o.Dir, o.Network)
	if err != nil {
		return err
	}
	switch o.Kind {
	case "berth":
		r.Endpoint = "unix://" + filepath.Join(o.Dir, "cri.sock")
		r.RuncRoots = []string{filepath.Join(o.Dir, "state", "runc")}
		return r.Launch(ctx, o.LogPath, o.Berth, berthRuntimeArgs(o.Dir, r.Endpoint, confDir, o.RegistryHost, o.MirroredHosts)...)
	case "containerd":
		r.Endpoint = "unix://" + filepath.Join(o.Dir, "containerd.sock")
		r.RuncRoots = []string{filepath.Join(o.Dir, "runc", "k8s.io")}
		config, err := writeContainerdConfig(o.Dir, confDir, o.SandboxImage, o.RegistryHost, o.MirroredHosts)
		if err != nil {
			return err
		}
		return r.Launch(ctx, o.LogPath, "containerd", "--config", config)
	default:
		return fmt.Errorf("unknown runtime %q", o.Kind)
	}
}

// berthRuntimeArgs: `berth runtime` with its own NRI socket (NRI is on by
// default; a private socket keeps it away from other runtimes' plugins).
func berthRuntimeArgs(dir, endpoint, confDir, registryHost string, mirrored []string) []string {
	args := []string{"runtime", "--root", filepath.Join(dir, "root"), "--state-dir", filepath.Join(dir, "state"),
		"--listen", endpoint, "--cni-conf-dir", confDir, "--nri-socket", filepath.Join(dir, "nri.sock"),
		"--insecure-registry", registryHost}
	for _, host := range mirrored {
		args = append(args, "--registry-mirror", host+"=http://"+registryHost)
	}
	return args
}

// RequireCompanions checks that the executables the benchmarks' berth
// commands exec are beside berth: berth-runtime (`berth runtime`), which
// execs berth-monitor per container, and berth-agent (`berth agent`);
// hack/build.sh builds them all into one directory.
func RequireCompanions(berth string) error {
	for _, name := range []string{"berth-agent", "berth-runtime", "berth-monitor"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(berth), name)); err != nil {
			return fmt.Errorf("%w (build with hack/build.sh)", err)
		}
	}
	return nil
}
