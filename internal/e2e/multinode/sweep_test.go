package multinode

import (
	"bufio"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sweep is the last line of clean-up, for a test that failed before its
// pods were deleted: it kills what still runs in the node namespaces (the
// monitors and containers of the runtimes this test started, nothing else
// lives there) and unmounts whatever is left under dir (rootfs overlays,
// pinned pod namespaces), deepest first.
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
		for i := 0; i < 50; i++ {
			if out, _ := exec.Command("ip", "netns", "pids", ns).Output(); len(strings.TrimSpace(string(out))) == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	mounts := mountsUnder(dir)
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	for _, m := range mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			t.Logf("unmount %s: %v", m, err)
		}
	}
}

// mountsUnder lists mount points at or below dir in this mount namespace.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		// Octal escapes (\040 for a space) do not occur in t.TempDir paths.
		if mp := fields[4]; mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}
