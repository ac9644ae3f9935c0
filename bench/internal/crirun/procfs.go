package crirun

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessesMentioning lists the PIDs, other than the bench's own, whose
// command line contains dir: a runtime's helpers (berth-monitor names its
// container directory, containerd-shim its -address socket), which is how
// they are found for measuring and for killing what a daemon left behind.
func ProcessesMentioning(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}
