// Package runtimecli is `berth runtime`'s command: its flags, handed over
// to internal/runtime. berth-runtime (cmd/berth-runtime) is built from it
// alone, and `berth runtime` execs that binary (internal/cli), so the CRI
// daemon's process carries none of the multicall binary's other packages.
package runtimecli

import (
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth/berth/internal/cli/clibase"
	"github.com/berth/berth/internal/runtime"
)

// Execute runs `berth ARGS` with `runtime` as the only subcommand and
// returns the process exit code.
func Execute(args []string) int { return clibase.ExecuteCompanion(NewCommand(), args) }

// NewCommand is `berth runtime`: the CRI v1 runtime service.
func NewCommand() *cobra.Command {
	var (
		cfg        runtime.Config
		mirrors    []string
		cniBinDir  string
		pauseImage string
		maxLayer   string
	)
	cmd := &cobra.Command{
		Use:   "runtime",
		Short: "Run the CRI v1 runtime service (runc through a monitor per container, CNI networking, image store)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := parseMirrors(mirrors)
			if err != nil {
				return err
			}
			cfg.Mirrors = m
			if cfg.MaxLayerSize, err = parseByteSize(maxLayer); err != nil {
				return fmt.Errorf("--max-layer-size: %w", err)
			}
			if cniBinDir != "" {
				cfg.CNIBinDirs = filepath.SplitList(cniBinDir)
			}
			cfg.PauseImage = pauseImage
			cfg.Logger = slog.Default()
			return runtime.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Root, "root", filepath.Join(clibase.DefaultDataDir, "runtime"), "directory for images and other persistent content")
	f.StringVar(&cfg.StateDir, "state-dir", filepath.Join(clibase.DefaultDataDir, "runtime-state"), "directory for sandbox and container state, runc's root and the monitors")
	f.StringVar(&cfg.Listen, "listen", "unix://"+filepath.Join(clibase.DefaultSocketDir, "runtime.sock"), "CRI endpoint, unix:///PATH")
	f.StringVar(&cfg.NRISocket, "nri-socket", "", "socket NRI plugins connect to (default /var/run/nri/nri.sock)")
	f.BoolVar(&cfg.DisableNRI, "disable-nri", false, "do not serve NRI plugins")
	f.StringVar(&cfg.SocketGroup, "socket-group", "", "group owning the socket (mode 0660); root's group if empty")
	f.StringVar(&cfg.OCIRuntime, "oci-runtime", "runc", "OCI runtime binary")
	f.StringVar(&cfg.MonitorBinary, "monitor", "", "berth-monitor binary (default: beside this executable, then PATH)")
	f.StringVar(&cniBinDir, "cni-bin-dir", "", "CNI plugin directories, colon-separated (default /usr/lib/cni:/opt/cni/bin)")
	f.StringVar(&cfg.CNIConfDir, "cni-conf-dir", "", "CNI network config directory; a default bridge network is written if it is empty (default <state-dir>/cni/net.d)")
	f.BoolVar(&cfg.WaitForPodCIDR, "wait-for-pod-cidr", false, "write no default CNI network until the agent passes the node's pod CIDR (network not ready until then); for clusters with node IPAM")
	f.StringArrayVar(&cfg.Insecure, "insecure-registry", nil, "registry host reached over plain HTTP (repeatable)")
	f.StringArrayVar(&mirrors, "registry-mirror", nil, "HOST=URL: pull HOST's images from URL instead (repeatable)")
	f.StringVar(&cfg.MetricsAddress, "metrics-address", "", "host:port serving Prometheus metrics (off if empty)")
	f.StringVar(&cfg.StreamAddress, "stream-address", "127.0.0.1:0", "loopback host:port of the exec/attach/port-forward streaming server")
	f.StringArrayVar(&cfg.RuntimeHandlers, "runtime-handler", nil, "extra CRI runtime handler, run with the OCI runtime as the default one; RuntimeClasses name it in their handler (repeatable)")
	f.StringVar(&pauseImage, "pause-image", "", "image whose command is the pause process of sandboxes that share a PID namespace (default registry.k8s.io/pause:3.9)")
	f.StringVar(&maxLayer, "max-layer-size", "64Gi", "largest uncompressed image layer a pull accepts (bytes, or with a Ki/Mi/Gi/Ti suffix); a larger one fails the pull")
	return cmd
}

// parseByteSize reads a positive byte count, plain or with a binary suffix
// as Kubernetes quantities write them ("512Mi", "64Gi").
func parseByteSize(s string) (int64, error) {
	num, shift := s, 0
	for i, suffix := range []string{"Ki", "Mi", "Gi", "Ti"} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			num, shift = n, 10*(i+1)
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q is not a positive size like 1073741824 or 64Gi", s)
	}
	return n << shift, nil
}

// parseMirrors turns HOST=URL flags into the image service's mirror map,
// keeping the order given for each host.
func parseMirrors(flags []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, f := range flags {
		host, url, ok := strings.Cut(f, "=")
		if !ok || host == "" || url == "" {
			return nil, fmt.Errorf("--registry-mirror %q: want HOST=URL", f)
		}
		out[host] = append(out[host], url)
	}
	return out, nil
}
