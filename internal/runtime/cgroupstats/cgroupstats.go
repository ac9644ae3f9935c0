// Package cgroupstats reads a container's resource accounting straight from
// its cgroups (v1 or v2) and from /proc: the raw figures behind the
// cAdvisor-style container_* metrics that CRI's ListPodSandboxMetrics reports.
//
// It reads the files itself rather than through runc's libcontainer or
// containerd/cgroups: those pull in large dependency trees (systemd D-Bus,
// eBPF) for what is a handful of text files, and neither reports the
// process-level figures (descriptors, sockets) the metrics need anyway.
package cgroupstats

import (
	"fmt"
	"path/filepath"
	"time"
)

// Sample is one reading of a container's cgroups and processes.
type Sample struct {
	Timestamp time.Time
	CPU       CPU
	Memory    Memory
	Pids      Pids
	Blkio     []BlkioEntry
	Procs     Procs
}

// CPU is cumulative CPU time (nanoseconds) and the CFS settings.
type CPU struct {
	UsageNanos, UserNanos, SystemNanos uint64
	Periods, ThrottledPeriods          uint64
	ThrottledNanos                     uint64
	PeriodMicros                       uint64 // CFS period
	QuotaMicros                        int64  // -1: unlimited
	Shares                             uint64 // v2 weights are converted back to shares
}

// Memory is usage in bytes and event counters.
type Memory struct {
	Usage, MaxUsage, WorkingSet  uint64
	Cache, RSS, MappedFile, Swap uint64
	Kernel                       uint64
	Limit, SwapLimit             uint64 // 0: unlimited
	Failcnt, OOMKills            uint64
	PageFaults, MajorPageFaults  uint64
}

// Pids counts tasks (threads) in the cgroup and its limit (0: unlimited).
type Pids struct{ Current, Limit uint64 }

// BlkioEntry is one device's counter for one operation.
type BlkioEntry struct {
	Major, Minor uint64
	Op           string // Read, Write, ...
	Bytes        uint64
	Ops          uint64
}

// Procs are figures gathered from /proc for the cgroup's processes.
type Procs struct {
	Processes, Threads uint64
	FileDescriptors    uint64
	Sockets            uint64
}

// Reader reads cgroups located through a proc filesystem.
type Reader struct {
	// Proc is the proc filesystem, "/proc" on a real host; tests point it
	// at a fake tree.
	Proc string
}

// NewHost reads the host's /proc and cgroup mounts.
func NewHost() *Reader { return &Reader{Proc: "/proc"} }

// ReadPid samples the cgroups the process pid belongs to (a container's
// init process).
func (r *Reader) ReadPid(pid int) (Sample, error) {
	if pid <= 0 {
		return Sample{}, fmt.Errorf("cgroupstats: invalid pid %d", pid)
	}
	paths, err := r.locate(pid)
	if err != nil {
		return Sample{}, err
	}
	s := Sample{Timestamp: time.Now()}
	if paths.unified != "" && len(paths.v1) == 0 {
		err = readV2(paths.unified, &s)
	} else {
		err = readV1(paths.v1, &s)
	}
	if err != nil {
		return Sample{}, fmt.Errorf("cgroupstats: pid %d: %w", pid, err)
	}
	s.Procs = r.readProcs(paths.procsFile())
	return s, nil
}

// procsFile is the list of the cgroup's processes.
func (p cgroupPaths) procsFile() string {
	if len(p.v1) == 0 {
		return filepath.Join(p.unified, "cgroup.procs")
	}
	for _, c := range []string{"pids", "memory", "cpu", "cpuacct"} {
		if d, ok := p.v1[c]; ok {
			return filepath.Join(d, "cgroup.procs")
		}
	}
	return ""
}
