package density

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// berthBin is the real binary, built once with berth-monitor beside it (the
// runtime execs the monitor from beside its own executable).
var berthBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "berth-density-bin")
	if err != nil {
		panic(err)
	}
	berthBin = filepath.Join(dir, "berth")
	cmd := exec.Command("../../../hack/build.sh", dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
