package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/berth/berth/bench/internal/crirun"
)

// startRegistry builds and runs hack/testregistry --critest on a loopback
// port: every image critest pulls, under critest's own names, offline. It
// returns the registry's host:port.
func startRegistry(ctx context.Context, dir string) (*crirun.Process, string, error) {
	bin := filepath.Join(dir, "testregistry")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./hack/testregistry")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("build hack/testregistry: %w\n%s", err, out)
	}
	ready := filepath.Join(dir, "registry.addr")
	p, err := crirun.StartProcess("test registry", filepath.Join(dir, "registry.log"), bin,
		"--listen", "127.0.0.1:0", "--critest", "--ready-file", ready)
	if err != nil {
		return nil, "", err
	}
	var addr string
	err = p.WaitFor(ctx, 10*time.Minute, func(context.Context) error {
		data, err := os.ReadFile(ready)
		if err != nil {
			return err
		}
		addr = strings.TrimSpace(string(data))
		return nil
	})
	if err != nil {
		p.Stop(10 * time.Second)
		return nil, "", fmt.Errorf("test registry: %w", err)
	}
	return p, addr, nil
}
