package cgroupstats

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// userHZ is the unit of cpuacct.stat: USER_HZ is 100 on every Linux ABI.
const userHZ = 100

// readV1 reads the cgroup v1 controllers' files.
func readV1(dirs map[string]string, s *Sample) error {
	if err := readMemoryV1(dirs["memory"], &s.Memory); err != nil {
		return err
	}
	readCPUV1(dirs["cpu"], dirs["cpuacct"], &s.CPU)
	if d, ok := dirs["pids"]; ok {
		s.Pids = Pids{Current: optUint(d, "pids.current"), Limit: optUint(d, "pids.max")}
	}
	if d, ok := dirs["blkio"]; ok {
		s.Blkio = readBlkioV1(d)
	}
	return nil
}

func readMemoryV1(dir string, m *Memory) error {
	usage, err := readUint(dir, "memory.usage_in_bytes")
	if err != nil {
		return fmt.Errorf("memory usage: %w", err)
	}
	st := readKeyed(dir, "memory.stat")
	m.Usage = usage
	m.MaxUsage = optUint(dir, "memory.max_usage_in_bytes")
	m.Failcnt = optUint(dir, "memory.failcnt")
	m.Kernel = optUint(dir, "memory.kmem.usage_in_bytes")
	m.Cache, m.RSS, m.MappedFile = st["total_cache"], st["total_rss"], st["total_mapped_file"]
	m.PageFaults, m.MajorPageFaults = st["total_pgfault"], st["total_pgmajfault"]
	m.Swap = st["total_swap"]
	m.WorkingSet = workingSet(usage, st["total_inactive_file"])
	m.Limit = v1Limit(optUint(dir, "memory.limit_in_bytes"))
	m.SwapLimit = v1Limit(optUint(dir, "memory.memsw.limit_in_bytes"))
	m.OOMKills = readKeyed(dir, "memory.oom_control")["oom_kill"]
	return nil
}

// v1Limit maps v1's "unlimited" (a page-rounded huge number) to 0.
func v1Limit(v uint64) uint64 {
	if v >= 1<<62 {
		return 0
	}
	return v
}

func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}

// readCPUV1 reads cpu (CFS) and cpuacct, which may be one mount or two.
func readCPUV1(cpuDir, acctDir string, c *CPU) {
	if acctDir == "" {
		acctDir = cpuDir
	}
	c.UsageNanos = optUint(acctDir, "cpuacct.usage")
	acct := readKeyed(acctDir, "cpuacct.stat")
	c.UserNanos = acct["user"] * (1e9 / userHZ)
	c.SystemNanos = acct["system"] * (1e9 / userHZ)
	st := readKeyed(cpuDir, "cpu.stat")
	c.Periods, c.ThrottledPeriods, c.ThrottledNanos = st["nr_periods"], st["nr_throttled"], st["throttled_time"]
	c.PeriodMicros = optUint(cpuDir, "cpu.cfs_period_us")
	c.Shares = optUint(cpuDir, "cpu.shares")
	c.QuotaMicros = -1
	if b, err := os.ReadFile(filepath.Join(cpuDir, "cpu.cfs_quota_us")); err == nil {
		if q, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			c.QuotaMicros = q
		}
	}
}

// readBlkioV1 reads the throttle counters, which count every I/O (the
// CFQ ones exist only with that scheduler).
func readBlkioV1(dir string) []BlkioEntry {
	byKey := map[[3]string]*BlkioEntry{}
	var out []*BlkioEntry
	add := func(file string, bytes bool) {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text()) // "8:0 Read 4096"
			if len(fs) != 3 {
				continue
			}
			major, minor, ok := parseDevice(fs[0])
			v, err := strconv.ParseUint(fs[2], 10, 64)
			if !ok || err != nil {
				continue
			}
			key := [3]string{fs[0], fs[1]}
			e := byKey[key]
			if e == nil {
				e = &BlkioEntry{Major: major, Minor: minor, Op: fs[1]}
				byKey[key] = e
				out = append(out, e)
			}
			if bytes {
				e.Bytes = v
			} else {
				e.Ops = v
			}
		}
	}
	add("blkio.throttle.io_service_bytes", true)
	add("blkio.throttle.io_serviced", false)
	entries := make([]BlkioEntry, 0, len(out))
	for _, e := range out {
		entries = append(entries, *e)
	}
	return entries
}
