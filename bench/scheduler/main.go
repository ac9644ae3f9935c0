// Command scheduler measures berth's scheduling path end to end: N nodes
// and M pods against a real `berth server` (embedded etcd, API server,
// scheduler, atomic binding), reporting pods/s from creation to bound, the
// p50/p99 time to bind, and store writes per scheduled pod. It writes its
// figures into docs/benchmarks.md. Run: go run ./bench/scheduler
//
// With -peer kube-scheduler it measures berth's scheduler and kube-scheduler
// v1.37.2 (built by hack/build-bench-peers.sh kube-scheduler) one after the other
// against the same berth server, started with --disable-scheduler.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/bench/internal/report"
	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/nodewait"
)

type options struct {
	nodes, pods, clients int
	runs                 int
	out, cpuProfile      string
	peer, peerBinary     string
	peerLog              string
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 1000, "Node objects")
	flag.IntVar(&o.pods, "pods", 10000, "pods to schedule (per scheduler with -peer)")
	flag.IntVar(&o.clients, "clients", 64, "concurrent pod creators")
	flag.IntVar(&o.runs, "runs", 1, "runs, each on a fresh server; the report shows the median run (not with -peer)")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "report file (empty: print only)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the scheduling phase (server, scheduler and load generator share this process) to this file, and its allocations to FILE.allocs; not with -peer")
	flag.StringVar(&o.peer, "peer", "", `"kube-scheduler": measure berth's scheduler and kube-scheduler side by side against one berth server`)
	flag.StringVar(&o.peerBinary, "peer-binary", "_output/bench/kube-scheduler", "kube-scheduler binary for -peer (hack/build-bench-peers.sh kube-scheduler builds it)")
	flag.StringVar(&o.peerLog, "peer-log", "_output/bench/kube-scheduler.log", "kube-scheduler's output for -peer")
	flag.Parse()
	if err := validate(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/scheduler:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/scheduler:", err)
		os.Exit(1)
	}
}

func validate(o options) error {
	switch {
	case o.nodes <= 0 || o.pods <= 0 || o.clients <= 0 || o.runs <= 0:
		return fmt.Errorf("-nodes, -pods, -clients and -runs must be positive")
	case o.peer != "" && o.runs != 1:
		return fmt.Errorf("-runs repeats berth's scheduler alone; it cannot be combined with -peer")
	case o.peer != "" && o.peer != "kube-scheduler":
		return fmt.Errorf("-peer %q: only kube-scheduler is known", o.peer)
	case o.peer != "" && o.cpuProfile != "":
		return fmt.Errorf("-cpuprofile profiles berth's in-server scheduler; it cannot be combined with -peer")
	}
	if o.peer != "" {
		if _, err := os.Stat(o.peerBinary); err != nil {
			return fmt.Errorf("-peer-binary: %w (build it with hack/build-bench-peers.sh kube-scheduler)", err)
		}
	}
	return nil
}

func run(o options) error {
	var body string
	if o.peer != "" {
		err := withServer(o, func(ctx context.Context, cs kubernetes.Interface, dir string, port int, leaseWrites *atomic.Int64) (err error) {
			body, err = runSideBySide(ctx, cs, dir, port, o, leaseWrites)
			return err
		})
		if err != nil {
			return err
		}
	} else {
		var runs []measurement
		for range o.runs {
			err := withServer(o, func(ctx context.Context, cs kubernetes.Interface, _ string, _ int, leaseWrites *atomic.Int64) error {
				m, err := runInServer(ctx, cs, o, leaseWrites)
				runs = append(runs, m)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "run %d of %d: %.0f pods/s\n", len(runs), o.runs, runs[len(runs)-1].podsPerSecond())
		}
		body = markdown(o, runs)
	}
	fmt.Print(body)
	if o.out == "" {
		return nil
	}
	section := "scheduler"
	if o.peer != "" {
		section = "scheduler-peer"
	}
	return report.Write(o.out, section, body)
}

// withServer starts a berth server on a fresh data directory, registers
// the nodes with heartbeating Leases, calls measure and stops the server.
func withServer(o options, measure func(ctx context.Context, cs kubernetes.Interface, dir string, port int, leaseWrites *atomic.Int64) error) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "berth-bench-scheduler")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{DataDir: dir, BindAddress: "127.0.0.1", Port: port, DisableAgent: true,
			DisableScheduler: o.peer != "", Logger: warnLogger()})
	}()
	cs, err := waitForServer(ctx, filepath.Join(dir, "admin.kubeconfig"), done)
	if err != nil {
		return err
	}
	if err := createNodes(ctx, cs, o.nodes, o.clients); err != nil {
		return err
	}
	// Nodes heartbeat as agents would (a Lease renewed every 10 s), so the
	// node lifecycle controller keeps them Ready through the run.
	var leaseWrites atomic.Int64
	heartbeats, err := startHeartbeats(ctx, cs, o.nodes, o.clients, &leaseWrites)
	if err != nil {
		return err
	}
	if err := nodewait.Untainted(ctx, cs, 2*time.Minute); err != nil {
		heartbeats()
		return err
	}
	err = measure(ctx, cs, dir, port, &leaseWrites)
	heartbeats()
	cancel()
	return errors.Join(err, <-done)
}

// runInServer measures the scheduler berth server runs itself.
func runInServer(ctx context.Context, cs kubernetes.Interface, o options, leaseWrites *atomic.Int64) (measurement, error) {
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return measurement{}, err
	}
	defer stopProfile()
	return measurePhase(ctx, cs, "default", o.pods, o.clients, leaseWrites)
}

func warnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
