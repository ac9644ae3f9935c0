// Command scheduler measures berth's scheduling path end to end: N nodes
// and M pods against a real `berth server` (embedded etcd, API server,
// scheduler, atomic binding), reporting pods/s from creation to bound, the
// p50/p99 time to bind, and store writes per scheduled pod. It writes its
// figures into docs/benchmarks.md. Run: go run ./bench/scheduler
//
// With -peer kube-scheduler it measures berth's scheduler and kube-scheduler
// v1.37.2 (built by bench/scheduler/build-peer.sh) one after the other
// against the same berth server, started with --disable-scheduler.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/bench/internal/report"
	"github.com/berth/berth/internal/server"
)

type options struct {
	nodes, pods, clients int
	out, cpuProfile      string
	peer, peerBinary     string
	peerLog              string
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 1000, "Node objects")
	flag.IntVar(&o.pods, "pods", 10000, "pods to schedule (per scheduler with -peer)")
	flag.IntVar(&o.clients, "clients", 64, "concurrent pod creators")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "report file (empty: print only)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the scheduling phase (server, scheduler and load generator share this process) to this file, and its allocations to FILE.allocs; not with -peer")
	flag.StringVar(&o.peer, "peer", "", `"kube-scheduler": measure berth's scheduler and kube-scheduler side by side against one berth server`)
	flag.StringVar(&o.peerBinary, "peer-binary", "_output/bench/kube-scheduler", "kube-scheduler binary for -peer (bench/scheduler/build-peer.sh builds it)")
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
	case o.nodes <= 0 || o.pods <= 0 || o.clients <= 0:
		return fmt.Errorf("-nodes, -pods and -clients must be positive")
	case o.peer != "" && o.peer != "kube-scheduler":
		return fmt.Errorf("-peer %q: only kube-scheduler is known", o.peer)
	case o.peer != "" && o.cpuProfile != "":
		return fmt.Errorf("-cpuprofile profiles berth's in-server scheduler; it cannot be combined with -peer")
	}
	if o.peer != "" {
		if _, err := os.Stat(o.peerBinary); err != nil {
			return fmt.Errorf("-peer-binary: %w (build it with bench/scheduler/build-peer.sh)", err)
		}
	}
	return nil
}

func run(o options) error {
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
	defer heartbeats()
	var body string
	if o.peer != "" {
		body, err = runSideBySide(ctx, cs, dir, port, o, &leaseWrites)
	} else {
		body, err = runInServer(ctx, cs, o, &leaseWrites)
	}
	if err != nil {
		return err
	}
	fmt.Print(body)
	if o.out != "" {
		section := "scheduler"
		if o.peer != "" {
			section = "scheduler-peer"
		}
		if err := report.Write(o.out, section, body); err != nil {
			return err
		}
	}
	cancel()
	return <-done
}

// runInServer measures the scheduler berth server runs itself.
func runInServer(ctx context.Context, cs kubernetes.Interface, o options, leaseWrites *atomic.Int64) (string, error) {
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return "", err
	}
	m, err := measurePhase(ctx, cs, "default", o.pods, o.clients, leaseWrites)
	stopProfile()
	if err != nil {
		return "", err
	}
	return m.markdown(o.nodes, o.pods, o.clients), nil
}

func warnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
