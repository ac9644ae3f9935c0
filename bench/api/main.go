// Command api measures berth's API server under the load of a cluster's
// node agents and controllers, side by side with upstream's control plane
// (kube-apiserver v1.37.2, etcd, kube-controller-manager and kube-scheduler,
// which berth server holds in one process) in the same run: pod create
// throughput, watch delivery latency to node watchers, full LIST latency,
// status-update and delete throughput, and server memory. It writes the
// api section of docs/benchmarks.md.
//
//	hack/build-bench-peers.sh   # once: builds the peer's four into _output/bench
//	go run ./bench/api --shape small|large|both [--peer=false]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/berth/berth/bench/internal/report"
)

type options struct {
	shape     string
	runs      int
	peer      bool
	berth     string // berth binary; empty builds ./cmd/berth
	binDir    string // where hack/build-bench-peers.sh put kube-apiserver and etcd
	workDir   string // data directories and server logs
	out       string
	note      string
	berthArgs string // extra `berth server` flags, space-separated
	profile   string // where to save the servers' profiles (CPU and trace of the create phase, heap when loaded); empty: none
}

func main() {
	var o options
	flag.StringVar(&o.shape, "shape", "small", "small (100 nodes, 3000 pods, 32 clients), large (1000, 10000, 64) or both")
	flag.IntVar(&o.runs, "runs", 1, "runs per server and shape, alternating servers; the report shows medians")
	flag.BoolVar(&o.peer, "peer", true, "also run the peer, "+peerColumn+" (build them with hack/build-bench-peers.sh)")
	flag.StringVar(&o.berth, "berth", "", "berth binary to run (default: build ./cmd/berth into _output/bench/berth)")
	flag.StringVar(&o.binDir, "peer-bin-dir", "_output/bench", "directory holding kube-apiserver and etcd")
	flag.StringVar(&o.workDir, "work-dir", "_output/bench/api", "directory for the servers' data and logs (wiped per server)")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "report file (empty: print only)")
	flag.StringVar(&o.berthArgs, "berth-args", "", "extra flags for berth server, space-separated (e.g. --disable-scheduler)")
	flag.StringVar(&o.profile, "profile-dir", "", "save each server's CPU profile and execution trace of the create phase and its heap profile when loaded here (starts berth with --profiling; kube-apiserver profiles by default)")
	flag.StringVar(&o.note, "note", "", "a sentence to add to the report, e.g. about the machine's state")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, o, log); err != nil {
		fmt.Fprintln(os.Stderr, "bench/api:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	selected, err := selectShapes(o.shape)
	if err != nil {
		return err
	}
	if o.runs < 1 {
		return fmt.Errorf("--runs %d: want at least 1", o.runs)
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return fmt.Errorf("--profile-dir: %w", err)
		}
	}
	info := runInfo{command: commandLine(), date: time.Now(), note: o.note, runs: o.runs, berth: "the binary " + o.berth}
	if o.berth == "" {
		if o.berth, err = buildBerth(ctx); err != nil {
			return err
		}
		info.berth = "built from this checkout at " + checkoutRevision(ctx)
	}
	info.loadBefore = loadAverage()
	var comps []comparison
	for _, s := range selected {
		c, err := compareOn(ctx, o, s, log)
		if err != nil {
			return err
		}
		comps = append(comps, c)
	}
	info.loadEnd = loadAverage()
	body := renderReport(info, comps)
	fmt.Print(body)
	if o.out == "" {
		return nil
	}
	return report.Write(o.out, "api", body)
}

func selectShapes(name string) ([]shape, error) {
	switch name {
	case "both":
		return []shape{shapes["small"], shapes["large"]}, nil
	case "small", "large":
		return []shape{shapes[name]}, nil
	}
	return nil, fmt.Errorf("unknown --shape %q: want small, large or both", name)
}

// compareOn runs shape s o.runs times against berth and (with o.peer) the
// peer, alternating, so that drift in the machine's load hits both alike.
func compareOn(ctx context.Context, o options, s shape, log *slog.Logger) (comparison, error) {
	var berthRuns, peerRuns []*result
	for run := range o.runs {
		log := log.With("run", run+1)
		r, err := runTarget(ctx, o, s, "berth", log)
		if err != nil {
			return comparison{}, err
		}
		berthRuns = append(berthRuns, r)
		if !o.peer {
			continue
		}
		if r, err = runTarget(ctx, o, s, "peer", log); err != nil {
			return comparison{}, err
		}
		peerRuns = append(peerRuns, r)
	}
	c := comparison{shape: s, berth: medianResult(berthRuns)}
	if o.peer {
		c.peer = medianResult(peerRuns)
	}
	return c, nil
}

// runTarget starts one server on a fresh data directory, measures shape s
// against it and stops it.
func runTarget(ctx context.Context, o options, s shape, which string, log *slog.Logger) (*result, error) {
	dir, err := filepath.Abs(filepath.Join(o.workDir, s.name+"-"+which))
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// The previous run's servers left hundreds of MB of WAL and database
	// to write back; flush them now, so that writeback does not compete
	// with this server's fsyncs.
	syscall.Sync()
	log = log.With("shape", s.name, "server", which)
	log.Info("starting server", "dir", dir)
	var t *target
	if which == "berth" {
		t, err = startBerth(ctx, o.berth, dir, dir, berthFlags(o))
	} else {
		t, err = startPeer(ctx, o.binDir, dir, dir)
	}
	if err != nil {
		return nil, err
	}
	defer t.stop()
	r, err := measure(ctx, t, s, log, o.profile)
	if err != nil {
		return nil, fmt.Errorf("%s, %s shape: %w (server logs in %s)", t.name, s.name, err, dir)
	}
	log.Info("done", "creates/s", int(r.createPerSec), "watch p99", r.watchP99)
	return r, nil
}

// berthFlags are the extra flags of `berth server` the options ask for.
func berthFlags(o options) []string {
	extra := strings.Fields(o.berthArgs)
	if o.profile != "" {
		extra = append(extra, "--profiling")
	}
	return extra
}

// buildBerth builds the berth binary from this checkout the way users get
// it (hack/build.sh: static, with version ldflags), so the figures are for
// the code at hand. A plain `go build` links cgo, and kustomize's import of
// Go's plugin package then exports every symbol dynamically: ~40 MB more
// resident memory than the binary users run.
func buildBerth(ctx context.Context) (string, error) {
	dir, err := filepath.Abs("_output/bench")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "hack/build.sh", dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build berth with hack/build.sh (run from the repository root): %w", err)
	}
	return filepath.Join(dir, "berth"), nil
}

// checkoutRevision names the commit berth was built from, marked -dirty
// when the working tree had uncommitted changes.
func checkoutRevision(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "an unknown revision"
	}
	return strings.TrimSpace(string(out))
}

// commandLine is how this run was invoked, as a go run command line with
// the flags that were set (bar --note, which the report prints as text).
func commandLine() string {
	args := []string{"go", "run", "./bench/api"}
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "note" {
			return
		}
		v := f.Value.String()
		if v == "" {
			v = `""`
		}
		args = append(args, "--"+f.Name+"="+v)
	})
	return strings.Join(args, " ")
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(string(data)); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}
