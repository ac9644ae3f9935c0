package main

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/bench/internal/crirun"
)

// startAgent joins `berth agent` to s with the server's token, over the
// runtime's CRI socket, and waits until its node is Ready. The agent is the
// same binary and the same flags for both runtimes; its node server listens
// on loopback only, host-gw routes are off (one node).
func startAgent(ctx context.Context, berth, dir, nodeName string, s *server, rt *crirun.Runtime) (*crirun.Process, error) {
	p, err := crirun.StartProcess("berth agent", filepath.Join(dir, "agent.log"), berth, "agent",
		"--server", s.url, "--token", s.token, "--node-name", nodeName,
		"--data-dir", filepath.Join(dir, "agent"), "--runtime-endpoint", rt.Endpoint,
		"--address", "127.0.0.1", "--port", "0", "--node-ip", "127.0.0.1", "--host-gw-routes=false")
	if err != nil {
		return nil, err
	}
	err = p.WaitFor(ctx, 3*time.Minute, func(ctx context.Context) error {
		n, err := s.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errors.New("node not Ready yet")
	})
	if err != nil {
		p.Stop(30 * time.Second)
		return nil, err
	}
	return p, nil
}
