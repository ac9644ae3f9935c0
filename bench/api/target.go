package main

import (
	"context"
	"fmt"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// target is one API server under test: how to reach it as an admin, and
// the processes whose memory counts as its footprint.
type target struct {
	name   string
	config *rest.Config
	procs  []*process // in start order; stopped in reverse
	// bindChecksTaints: pods created bound to a node wait until it has
	// lost the not-ready taint TaintNodesByCondition admission gives a new
	// Node (berth checks a binding against the node's taints; kube-apiserver
	// does not, and alone runs no controller that lifts it).
	bindChecksTaints bool
}

func (t *target) stop() {
	for i := len(t.procs) - 1; i >= 0; i-- {
		t.procs[i].stop(15 * time.Second)
	}
}

// memory reads every process's resident set.
func (t *target) memory() ([]memory, error) {
	var out []memory
	for _, p := range t.procs {
		m, err := p.memory()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// cpuTime is the CPU all the target's processes have used so far.
func (t *target) cpuTime() (time.Duration, error) {
	var total time.Duration
	for _, p := range t.procs {
		d, err := p.cpuTime()
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}

// failed reports the first of the target's processes that has exited.
func (t *target) failed() error {
	for _, p := range t.procs {
		if err := p.failed(); err != nil {
			return err
		}
	}
	return nil
}

// loadConfig tunes an admin config for load generation: protobuf, as
// client-go uses for core types, and client-side rate limits far above what
// the server can take, so the server and not the client sets the pace.
func loadConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = 1e6, 1e6
	cfg.Timeout = 2 * time.Minute
	return cfg
}

// waitReady waits until the server answers /readyz as the admin.
func waitReady(ctx context.Context, t *target, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(t.config)
	if err != nil {
		return err
	}
	return waitFor(ctx, timeout, t.procs, func(ctx context.Context) error {
		if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			return err
		}
		_, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err
	})
}

// freePorts reserves n distinct loopback ports and releases them for the
// servers to bind (a small race, acceptable for a benchmark).
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve a port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
