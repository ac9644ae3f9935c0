// Command podstartup measures pod startup latency on one node with the same
// `berth agent` over two CRI runtimes: `berth runtime` and containerd 1.6
// (Debian's), with the same runc, CNI plugins and images (pre-pulled from an
// in-process registry on loopback, so no pull is timed).
//
// Each measurement starts everything fresh: a `berth server` (control plane
// only), the runtime, and an agent joined with the server's token; then N
// pods (one busybox container each, imagePullPolicy IfNotPresent) are created
// at once and a watch records, per pod, when all its containers are first
// seen running (state.running) and when it is first seen Ready; the pods are
// then deleted and everything is torn down. Latency is from the start of the
// pod's create request to that watch event: the Kubernetes pod startup SLI.
// Rounds alternate which runtime goes first.
//
// Run as root from the repository root after hack/build.sh (or through
// hack/bench-podstartup.sh): go run ./bench/podstartup [-write-docs]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/berth/berth/bench/internal/crirun"
)

// options are the command's flags.
type options struct {
	berth     string // berth binary, berth-monitor beside it
	pods      int
	rounds    int
	writeDocs bool
	docs      string
	workDir   string
	logDir    string // keep each measurement's server, runtime and agent logs here
}

func main() {
	var o options
	flag.StringVar(&o.berth, "berth", "_output/berth", "berth binary; berth-monitor must be beside it (hack/build.sh)")
	flag.IntVar(&o.pods, "pods", 100, "pods created at once on the node in each measurement")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds over both runtimes; each figure is the median over rounds")
	flag.BoolVar(&o.writeDocs, "write-docs", false, "also write the table into -docs (section \"podstartup\")")
	flag.StringVar(&o.docs, "docs", "docs/benchmarks.md", "the benchmarks document -write-docs updates")
	flag.StringVar(&o.workDir, "work-dir", "/tmp", "where the bench's temporary directory is made (short: unix socket paths)")
	flag.StringVar(&o.logDir, "log-dir", "", "keep each measurement's server, runtime and agent logs in this directory")
	flag.Parse()
	if o.pods < 1 || o.pods > 110 || o.rounds < 1 {
		fmt.Fprintln(os.Stderr, "bench/podstartup: -pods must be 1-110 (the node's capacity) and -rounds at least 1")
		os.Exit(2)
	}

	crirun.Main("bench/podstartup", func(ctx context.Context, logger *slog.Logger) error { return run(ctx, logger, o) })
}
