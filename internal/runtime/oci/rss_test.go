package oci

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/berth/berth/internal/runtime/monitor"
)

// BenchmarkMonitorRSS reports the resident memory of one idle monitor
// holding a running container: the per-container cost that the design
// budgets against containerd-shim-runc-v2. Run with -benchtime=1x.
func BenchmarkMonitorRSS(b *testing.B) {
	e := newTestEnv(b)
	for i := 0; i < b.N; i++ {
		id := "rss" + strconv.Itoa(i)
		e.run(id, containerOpts{args: []string{"sh", "-c", "echo ready; sleep 1000"}})
		proc, err := monitor.ReadProcess(filepath.Join(e.stateDir, id, monitor.PidFile))
		if err != nil {
			b.Fatal(err)
		}
		kib, err := vmRSS(proc.Pid)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(kib), "KiB-RSS/monitor")
	}
}

// vmRSS reads VmRSS (KiB) from /proc/PID/status.
func vmRSS(pid int) (int, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, os.ErrNotExist
}
