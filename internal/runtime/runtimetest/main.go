package runtimetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main is a test package's TestMain: it builds berth-monitor (which the
// runtime execs for every container) once into a temporary directory, sets
// *monitor to its path for Start, runs the tests and removes the build.
// internal/testkit/berthbin would build all of berth, the embedded kubectl
// included, for the one small binary the runtime needs.
func Main(m *testing.M, monitor *string) {
	os.Exit(run(m, monitor))
}

func run(m *testing.M, monitor *string) int {
	dir, err := os.MkdirTemp("", "berth-monitor-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "runtimetest: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "berth-monitor")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/berth/berth/cmd/berth-monitor")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "runtimetest: build berth-monitor: %v\n", err)
		return 1
	}
	*monitor = bin
	return m.Run()
}
