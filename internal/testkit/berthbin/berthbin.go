// Package berthbin builds the real berth binary once per test package, the
// way users get it (hack/build.sh: version ldflags, the companions
// berth-agent, berth-kubectl, berth-runtime and berth-monitor beside berth,
// which execs them from beside its own executable).
package berthbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Main is a test package's TestMain: it builds berth into a temporary
// directory, sets *bin to its path, runs the tests and removes the build.
func Main(m *testing.M, bin *string) {
	os.Exit(run(m, bin))
}

func run(m *testing.M, bin *string) int {
	dir, err := os.MkdirTemp("", "berth-bin")
	if err != nil {
		fmt.Fprintf(os.Stderr, "berthbin: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(filepath.Join(repoRoot(), "hack", "build.sh"), dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "berthbin: hack/build.sh: %v\n", err)
		return 1
	}
	*bin = filepath.Join(dir, "berth")
	return m.Run()
}

// repoRoot is three levels above this file (internal/testkit/berthbin).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
