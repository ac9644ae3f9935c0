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
// With -rate the pods are created at a steady rate instead of at once, as
// the SLO is measured upstream; the report goes to its own docs section.
// Rounds alternate which runtime goes first.
//
// Run as root from the repository root after hack/build.sh (or through
// hack/bench.sh podstartup): go run ./bench/podstartup [-write-docs]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/berth/berth/bench/internal/crirun"
)

// options are the command's flags.
type options struct {
	berth     string // berth binary, berth-monitor beside it
	pods      int
	rate      float64 // pods created per second; 0: all at once
	rounds    int
	writeDocs bool
	docs      string
	workDir   string
	logDir    string // keep each measurement's server, runtime and agent logs here
}

func main() {
	var o options
	flag.StringVar(&o.berth, "berth", "_output/berth", "berth binary; berth-monitor must be beside it (hack/build.sh)")
	flag.IntVar(&o.pods, "pods", 100, "pods created on the node in each measurement")
	flag.Float64Var(&o.rate, "rate", 0, "create the pods at this many per second (as clusterloader2 paces latency pods); 0 creates them all at once")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds over both runtimes; each figure is the median over rounds")
	flag.BoolVar(&o.writeDocs, "write-docs", false, "also write the table into -docs (section \"podstartup\")")
	flag.StringVar(&o.docs, "docs", "docs/benchmarks.md", "the benchmarks document -write-docs updates")
	flag.StringVar(&o.workDir, "work-dir", "/tmp", "where the bench's temporary directory is made (short: unix socket paths)")
	flag.StringVar(&o.logDir, "log-dir", "", "keep each measurement's server, runtime and agent logs in this directory")
	flag.Parse()
	if o.pods < 1 || o.pods > 110 || o.rounds < 1 || o.rate < 0 {
		fmt.Fprintln(os.Stderr, "bench/podstartup: -pods must be 1-110 (the node's capacity) and -rounds at least 1, -rate not negative")
		os.Exit(2)
	}

	crirun.Main("bench/podstartup", func(ctx context.Context, logger *slog.Logger) error { return run(ctx, logger, o) })
}

// docsSection is where -write-docs puts the report: paced runs have their own.
func (o options) docsSection() string {
	if o.rate > 0 {
		return "podstartup-paced"
	}
	return "podstartup"
}

// commandLine is how the report names the run that produced it.
func (o options) commandLine() string {
	rate := ""
	if o.rate > 0 {
		rate = fmt.Sprintf(" -rate %g", o.rate)
	}
	return fmt.Sprintf("go run ./bench/podstartup -pods %d%s -rounds %d", o.pods, rate, o.rounds)
}

// headingSuffix tells a paced run's report from a burst's.
func (o options) headingSuffix() string {
	if o.rate > 0 {
		return fmt.Sprintf(" at a steady %g pods/s", o.rate)
	}
	return ", all pods at once"
}

// arrival says how the pods were created.
func (o options) arrival() string {
	if o.rate > 0 {
		return fmt.Sprintf("created at a steady %g pods/s (one create request every %s, each on its own goroutine)", o.rate, time.Duration(float64(time.Second)/o.rate))
	}
	return fmt.Sprintf("created at once (%d parallel clients)", creators)
}
