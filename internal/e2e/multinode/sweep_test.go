package multinode

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	testcri "github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/wait"
)

// sweep is the last line of clean-up, for a test that failed before its
// pods were deleted: it kills what still runs in the node namespaces (the
// monitors and containers of the runtimes this test started, nothing else
// lives there) and unmounts whatever is left under dir (rootfs overlays,
// pinned pod namespaces).
func sweep(t *testing.T, dir string, namespaces []string) {
	for _, ns := range namespaces {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				t.Logf("killing leftover pid %d in %s", pid, ns)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	for _, ns := range namespaces {
		err := wait.Poll(context.Background(), 5*time.Second, "the processes in "+ns+" to exit", func(context.Context) error {
			if out, _ := exec.Command("ip", "netns", "pids", ns).Output(); len(strings.TrimSpace(string(out))) > 0 {
				return fmt.Errorf("pids %s", strings.Fields(string(out)))
			}
			return nil
		})
		if err != nil {
			t.Log(err) // the sweep goes on: unmounting below does not need them gone
		}
	}
	testcri.UnmountUnder(dir)
}
