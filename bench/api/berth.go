package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// startBerth runs `berth server` with its embedded etcd (one process, no
// agent) in a fresh data directory under dir.
func startBerth(ctx context.Context, bin, dir, logDir string, extraArgs []string) (*target, error) {
	dataDir := filepath.Join(dir, "berth")
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	args := []string{"server", "--data-dir", dataDir, "--bind-address", "127.0.0.1", "--port", strconv.Itoa(ports[0]), "--disable-agent",
		// Sized for the large shape's 1000 nodes (the default /16 of /24s
		// holds 256), as a cluster of that size would be configured.
		"--cluster-cidr", "10.64.0.0/12"}
	args = append(args, extraArgs...)
	p, err := startProcess("berth server", filepath.Join(logDir, "berth-server.log"), bin, args...)
	if err != nil {
		return nil, err
	}
	t := &target{name: "berth", procs: []*process{p}, bindChecksTaints: true}
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	err = waitFor(ctx, 2*time.Minute, t.procs, func(context.Context) error {
		if _, err := os.Stat(kubeconfig); err != nil {
			return err
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		t.config = cfg
		return err
	})
	if err == nil {
		err = waitReady(ctx, t, 2*time.Minute)
	}
	if err != nil {
		t.stop()
		return nil, fmt.Errorf("berth server: %w", err)
	}
	return t, nil
}
