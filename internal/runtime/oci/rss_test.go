package oci

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
		rss, err := procKiB(proc.Pid, "status", "VmRSS:")
		if err != nil {
			b.Fatal(err)
		}
		anon, err := procKiB(proc.Pid, "status", "RssAnon:")
		if err != nil {
			b.Fatal(err)
		}
		// PSS shares the binary's pages among the monitors mapping them:
		// the fair per-container cost when many run.
		pss, err := procKiB(proc.Pid, "smaps_rollup", "Pss:")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rss), "KiB-RSS/monitor")
		b.ReportMetric(float64(anon), "KiB-RssAnon/monitor")
		b.ReportMetric(float64(pss), "KiB-PSS/monitor")
	}
}

// procKiB reads a "Key: N kB" line of /proc/PID/<file>.
func procKiB(pid int, file, key string) (int, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), file))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			return strconv.Atoi(f[1])
		}
	}
	return 0, os.ErrNotExist
}

// BenchmarkCreateStartDelete measures the runtime side of a container's
// start: Create (monitor + `runc run --detach`, which creates and starts
// it); Delete is untimed.
func BenchmarkCreateStartDelete(b *testing.B) {
	e := newTestEnv(b)
	b.StopTimer()
	var create time.Duration
	for i := 0; i < b.N; i++ {
		id := "bench" + strconv.Itoa(i)
		opts := e.createOptionsOnly(id, containerOpts{args: []string{"sleep", "1000"}})
		b.StartTimer()
		t0 := time.Now()
		if _, err := e.rt.RunDetached(ctx(b), opts); err != nil {
			b.Fatal(err)
		}
		create += time.Since(t0)
		b.StopTimer()
		if err := e.rt.Delete(ctx(b), id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(create.Milliseconds())/float64(b.N), "ms-create/op")
}
