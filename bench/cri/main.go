// Command cri compares berth runtime with containerd 1.6 (Debian's) as CRI
// runtimes on this machine, in one run and with the same runc, CNI plugins
// and images (served offline on loopback by hack/testregistry --critest):
//
//   - critest -benchmark (cri-tools v1.37.0): RunPodSandbox, CreateContainer,
//     StartContainer, StopPodSandbox, RemovePodSandbox and PullImage latencies;
//   - each daemon's RSS idle, after the critest runs and with 50 pods
//     running (one busybox sleep container each);
//   - the per-pod RSS of berth-monitor beside containerd-shim-runc-v2's.
//
// It writes the side-by-side table into docs/benchmarks.md (section "cri").
// Run as root, from the repository root, after hack/setup.sh and
// hack/build.sh (or through hack/bench.sh cri): go run ./bench/cri
package main

import (
	"context"
	"flag"
	"log/slog"

	"github.com/berth/berth/bench/internal/crirun"
)

// options are the command's flags.
type options struct {
	berth      string // berth binary (berth-monitor beside it)
	critest    string
	rounds     int // full rounds over both runtimes; figures are medians over rounds
	pods       int // critest podsNumber and containersNumber
	pulls      int // critest imagesNumber
	runningPod int // pods kept running for the RSS figures
	out        string
	workDir    string // parent of the bench's temporary directory
}

func main() {
	var o options
	flag.StringVar(&o.berth, "berth", "_output/berth", "berth binary; berth-monitor must be beside it (hack/build.sh)")
	flag.StringVar(&o.critest, "critest", "_output/tools/critest", "critest v1.37.0 (hack/setup.sh)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds over both runtimes; each figure is the median over rounds")
	flag.IntVar(&o.pods, "pods", 100, "samples of critest's pod and container lifecycle benchmarks")
	flag.IntVar(&o.pulls, "pulls", 20, "samples of critest's image pull benchmark")
	flag.IntVar(&o.runningPod, "running-pods", 50, "pods kept running for the loaded RSS figures")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "report file (empty: print only)")
	flag.StringVar(&o.workDir, "work-dir", "/tmp", "where the bench's temporary directory is made (short: unix socket paths)")
	flag.Parse()

	crirun.Main("bench/cri", func(ctx context.Context, logger *slog.Logger) error { return run(ctx, logger, o) })
}
