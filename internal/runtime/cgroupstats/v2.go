package cgroupstats

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// readV2 reads the unified hierarchy's files.
func readV2(dir string, s *Sample) error {
	usage, err := readUint(dir, "memory.current")
	if err != nil {
		return fmt.Errorf("memory usage: %w", err)
	}
	st := readKeyed(dir, "memory.stat")
	ev := readKeyed(dir, "memory.events")
	m := &s.Memory
	m.Usage = usage
	m.MaxUsage = optUint(dir, "memory.peak")
	m.Cache, m.RSS, m.MappedFile = st["file"], st["anon"], st["file_mapped"]
	m.PageFaults, m.MajorPageFaults = st["pgfault"], st["pgmajfault"]
	m.Kernel = st["kernel"]
	if m.Kernel == 0 {
		m.Kernel = st["kernel_stack"] + st["slab"] + st["sock"] + st["percpu"]
	}
	m.Swap = optUint(dir, "memory.swap.current")
	m.WorkingSet = workingSet(usage, st["inactive_file"])
	m.Limit = optUint(dir, "memory.max")
	m.SwapLimit = optUint(dir, "memory.swap.max")
	// v2 has no failcnt; hitting memory.max is what v1 counted.
	m.Failcnt, m.OOMKills = ev["max"], ev["oom_kill"]

	cpu := readKeyed(dir, "cpu.stat")
	c := &s.CPU
	c.UsageNanos, c.UserNanos, c.SystemNanos = cpu["usage_usec"]*1000, cpu["user_usec"]*1000, cpu["system_usec"]*1000
	c.Periods, c.ThrottledPeriods, c.ThrottledNanos = cpu["nr_periods"], cpu["nr_throttled"], cpu["throttled_usec"]*1000
	c.QuotaMicros, c.PeriodMicros = readCPUMax(dir)
	if w := optUint(dir, "cpu.weight"); w > 0 {
		c.Shares = weightToShares(w)
	}
	s.Pids = Pids{Current: optUint(dir, "pids.current"), Limit: optUint(dir, "pids.max")}
	s.Blkio = readIOStat(dir)
	return nil
}

// readCPUMax reads "quota period" from cpu.max; quota "max" is -1.
func readCPUMax(dir string) (int64, uint64) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return -1, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return -1, 0
	}
	period, _ := strconv.ParseUint(f[1], 10, 64)
	quota, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		quota = -1
	}
	return quota, period
}

// weightToShares inverts runc's shares->weight conversion
// (weight = 1 + (shares-2)*9999/262142), so the reported figure is the one
// the CRI asked for. The conversion rounds down, so a weight stands for a
// range of shares: this answers the largest, which is exact for the
// default 1024, and 2 (the minimum) for weight 1.
func weightToShares(w uint64) uint64 {
	if w <= 1 {
		return 2
	}
	return min(2+(w*262142-1)/9999, 262144)
}

// readIOStat reads io.stat lines: "8:0 rbytes=1 wbytes=2 rios=3 wios=4 ...".
func readIOStat(dir string) []BlkioEntry {
	f, err := os.Open(filepath.Join(dir, "io.stat"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []BlkioEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		major, minor, ok := parseDevice(fs[0])
		if !ok {
			continue
		}
		kv := map[string]uint64{}
		for _, p := range fs[1:] {
			k, v, _ := strings.Cut(p, "=")
			kv[k], _ = strconv.ParseUint(v, 10, 64)
		}
		out = append(out,
			BlkioEntry{Major: major, Minor: minor, Op: "Read", Bytes: kv["rbytes"], Ops: kv["rios"]},
			BlkioEntry{Major: major, Minor: minor, Op: "Write", Bytes: kv["wbytes"], Ops: kv["wios"]})
	}
	return out
}
