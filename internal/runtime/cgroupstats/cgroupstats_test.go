package cgroupstats

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeHost is a proc tree and cgroup mounts under a temporary directory.
type fakeHost struct {
	t    *testing.T
	root string
	r    *Reader
}

func newFakeHost(t *testing.T, mountinfo []string, cgroupFile string) *fakeHost {
	t.Helper()
	root := t.TempDir()
	h := &fakeHost{t: t, root: root, r: &Reader{Proc: filepath.Join(root, "proc")}}
	for i, l := range mountinfo {
		mountinfo[i] = strings.ReplaceAll(l, "ROOT", root)
	}
	h.write("proc/self/mountinfo", strings.Join(mountinfo, "\n")+"\n")
	h.write("proc/42/cgroup", cgroupFile)
	// Two processes: 42 with two threads, a socket and a file; 43 with one.
	for _, tid := range []string{"42/task/42", "42/task/44", "43/task/43", "42/fd", "43/fd"} {
		h.mkdir("proc/" + tid)
	}
	h.symlink("socket:[123]", "proc/42/fd/3")
	h.symlink("/dev/null", "proc/42/fd/0")
	h.symlink("/dev/null", "proc/43/fd/0")
	return h
}

func (h *fakeHost) mkdir(rel string) {
	if err := os.MkdirAll(filepath.Join(h.root, rel), 0o755); err != nil {
		h.t.Fatal(err)
	}
}

func (h *fakeHost) write(rel, content string) {
	h.mkdir(filepath.Dir(rel))
	if err := os.WriteFile(filepath.Join(h.root, rel), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *fakeHost) symlink(target, rel string) {
	if err := os.Symlink(target, filepath.Join(h.root, rel)); err != nil {
		h.t.Fatal(err)
	}
}

func TestReadPidCgroupV1(t *testing.T) {
	// cpu and cpuacct are separate mounts (as on this kind of host); the
	// memory mount shows the hierarchy from /outer (a nested runtime).
	h := newFakeHost(t, []string{
		"30 25 0:27 / ROOT/cg/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu",
		"31 25 0:28 / ROOT/cg/cpuacct rw,relatime shared:10 - cgroup cgroup rw,cpuacct",
		"32 25 0:29 /outer ROOT/cg/memory rw,relatime shared:11 - cgroup cgroup rw,memory",
		"33 25 0:30 / ROOT/cg/pids rw,relatime - cgroup cgroup rw,pids",
		"34 25 0:31 / ROOT/cg/blkio rw,relatime - cgroup cgroup rw,blkio",
		"35 25 0:32 / ROOT/cg/unified rw,relatime - cgroup2 cgroup2 rw",
		"36 25 0:33 / ROOT/other rw,relatime - ext4 /dev/sda1 rw",
	}, "5:pids:/berth/c1\n4:memory:/outer/berth/c1\n3:blkio:/berth/c1\n2:cpuacct:/berth/c1\n1:cpu:/berth/c1\n0::/\n")
	h.write("cg/memory/berth/c1/memory.usage_in_bytes", "10000\n")
	h.write("cg/memory/berth/c1/memory.max_usage_in_bytes", "20000\n")
	h.write("cg/memory/berth/c1/memory.limit_in_bytes", "9223372036854771712\n")
	h.write("cg/memory/berth/c1/memory.failcnt", "4\n")
	h.write("cg/memory/berth/c1/memory.stat", "cache 1\nrss 2\ntotal_cache 300\ntotal_rss 400\ntotal_mapped_file 50\ntotal_inactive_file 1000\ntotal_pgfault 7\ntotal_pgmajfault 1\n")
	h.write("cg/memory/berth/c1/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
	h.write("cg/memory/berth/c1/cgroup.procs", "42\n43\n")
	h.write("cg/cpuacct/berth/c1/cpuacct.usage", "5000000000\n")
	h.write("cg/cpuacct/berth/c1/cpuacct.stat", "user 300\nsystem 100\n")
	h.write("cg/cpu/berth/c1/cpu.stat", "nr_periods 10\nnr_throttled 3\nthrottled_time 7000\n")
	h.write("cg/cpu/berth/c1/cpu.cfs_period_us", "100000\n")
	h.write("cg/cpu/berth/c1/cpu.cfs_quota_us", "20000\n")
	h.write("cg/cpu/berth/c1/cpu.shares", "256\n")
	h.write("cg/pids/berth/c1/pids.current", "3\n")
	h.write("cg/pids/berth/c1/pids.max", "max\n")
	h.write("cg/pids/berth/c1/cgroup.procs", "42\n43\n")
	h.write("cg/blkio/berth/c1/blkio.throttle.io_service_bytes", "8:0 Read 4096\n8:0 Write 8192\n8:0 Total 12288\nTotal 12288\n")
	h.write("cg/blkio/berth/c1/blkio.throttle.io_serviced", "8:0 Read 1\n8:0 Write 2\n8:0 Total 3\nTotal 3\n")

	s, err := h.r.ReadPid(42)
	if err != nil {
		t.Fatal(err)
	}
	wantCPU := CPU{UsageNanos: 5e9, UserNanos: 3e9, SystemNanos: 1e9, Periods: 10, ThrottledPeriods: 3, ThrottledNanos: 7000, PeriodMicros: 100000, QuotaMicros: 20000, Shares: 256}
	if s.CPU != wantCPU {
		t.Errorf("cpu %+v, want %+v", s.CPU, wantCPU)
	}
	wantMem := Memory{Usage: 10000, MaxUsage: 20000, WorkingSet: 9000, Cache: 300, RSS: 400, MappedFile: 50, Failcnt: 4, OOMKills: 2, PageFaults: 7, MajorPageFaults: 1}
	if s.Memory != wantMem {
		t.Errorf("memory %+v, want %+v", s.Memory, wantMem)
	}
	if s.Pids != (Pids{Current: 3}) {
		t.Errorf("pids %+v", s.Pids)
	}
	wantIO := []BlkioEntry{{8, 0, "Read", 4096, 1}, {8, 0, "Write", 8192, 2}, {8, 0, "Total", 12288, 3}}
	if fmt.Sprint(s.Blkio) != fmt.Sprint(wantIO) {
		t.Errorf("blkio %+v, want %+v", s.Blkio, wantIO)
	}
	if want := (Procs{Processes: 2, Threads: 3, FileDescriptors: 3, Sockets: 1}); s.Procs != want {
		t.Errorf("procs %+v, want %+v", s.Procs, want)
	}
}

func TestReadPidCgroupV2(t *testing.T) {
	h := newFakeHost(t, []string{"35 25 0:32 / ROOT/cg rw,nosuid - cgroup2 cgroup2 rw,nsdelegate"}, "0::/berth/c2\n")
	d := "cg/berth/c2/"
	h.write(d+"memory.current", "10000\n")
	h.write(d+"memory.peak", "15000\n")
	h.write(d+"memory.max", "max\n")
	h.write(d+"memory.swap.max", "4096\n")
	h.write(d+"memory.swap.current", "12\n")
	h.write(d+"memory.stat", "anon 400\nfile 300\nkernel 77\nfile_mapped 50\ninactive_file 11000\npgfault 7\npgmajfault 1\n")
	h.write(d+"memory.events", "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n")
	h.write(d+"cpu.stat", "usage_usec 2000\nuser_usec 1500\nsystem_usec 500\nnr_periods 4\nnr_throttled 2\nthrottled_usec 30\n")
	h.write(d+"cpu.max", "max 100000\n")
	h.write(d+"cpu.weight", "39\n") // runc's weight for 1024 shares
	h.write(d+"pids.current", "4\n")
	h.write(d+"pids.max", "64\n")
	h.write(d+"io.stat", "8:16 rbytes=10 wbytes=20 rios=1 wios=2 dbytes=0 dios=0\n")
	h.write(d+"cgroup.procs", "42\n")

	s, err := h.r.ReadPid(42)
	if err != nil {
		t.Fatal(err)
	}
	wantCPU := CPU{UsageNanos: 2e6, UserNanos: 1.5e6, SystemNanos: 5e5, Periods: 4, ThrottledPeriods: 2, ThrottledNanos: 30000, PeriodMicros: 100000, QuotaMicros: -1, Shares: 1024}
	if s.CPU != wantCPU {
		t.Errorf("cpu %+v, want %+v", s.CPU, wantCPU)
	}
	wantMem := Memory{Usage: 10000, MaxUsage: 15000, WorkingSet: 0, Cache: 300, RSS: 400, MappedFile: 50, Swap: 12, Kernel: 77, SwapLimit: 4096, Failcnt: 5, OOMKills: 1, PageFaults: 7, MajorPageFaults: 1}
	if s.Memory != wantMem {
		t.Errorf("memory %+v, want %+v", s.Memory, wantMem)
	}
	if s.Pids != (Pids{Current: 4, Limit: 64}) {
		t.Errorf("pids %+v", s.Pids)
	}
	wantIO := []BlkioEntry{{8, 16, "Read", 10, 1}, {8, 16, "Write", 20, 2}}
	if fmt.Sprint(s.Blkio) != fmt.Sprint(wantIO) {
		t.Errorf("io %+v, want %+v", s.Blkio, wantIO)
	}
	if want := (Procs{Processes: 1, Threads: 2, FileDescriptors: 2, Sockets: 1}); s.Procs != want {
		t.Errorf("procs %+v, want %+v", s.Procs, want)
	}
}

func TestReadPidErrors(t *testing.T) {
	h := newFakeHost(t, []string{"35 25 0:32 / ROOT/cg rw - cgroup2 cgroup2 rw"}, "0::/gone\n")
	if _, err := h.r.ReadPid(0); err == nil {
		t.Error("pid 0 accepted")
	}
	if _, err := h.r.ReadPid(7); err == nil {
		t.Error("a process without /proc entry accepted")
	}
	if _, err := h.r.ReadPid(42); err == nil {
		t.Error("a cgroup without memory.current accepted")
	}
}

func TestReadNetwork(t *testing.T) {
	h := newFakeHost(t, nil, "")
	h.write("proc/42/net/dev", `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0
  eth0:    5000      40    1    2    0     0          0         0     3000      30    3    4    0     0       0          0
`)
	got, err := h.r.ReadNetwork(42)
	if err != nil {
		t.Fatal(err)
	}
	want := []Interface{{Name: "eth0", RxBytes: 5000, RxPackets: 40, RxErrors: 1, RxDropped: 2, TxBytes: 3000, TxPackets: 30, TxErrors: 3, TxDropped: 4}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestReadFilesystemCountsWrittenBytes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	fs, err := ReadFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fs.UsageBytes < 64<<10 || fs.LimitBytes < fs.UsageBytes || fs.InodesTotal == 0 || fs.InodesFree > fs.InodesTotal || fs.Device == "" {
		t.Errorf("filesystem %+v", fs)
	}
	if _, err := ReadFilesystem(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory measured")
	}
}

func TestWeightToSharesInvertsRunc(t *testing.T) {
	runcWeight := func(shares uint64) uint64 { return 1 + (shares-2)*9999/262142 }
	for _, shares := range []uint64{2, 102, 512, 1024, 2048, 262144} {
		back := weightToShares(runcWeight(shares))
		if runcWeight(back) != runcWeight(shares) {
			t.Errorf("shares %d -> weight %d -> shares %d, a different weight", shares, runcWeight(shares), back)
		}
	}
	if got := weightToShares(runcWeight(1024)); got != 1024 {
		t.Errorf("default shares come back as %d", got)
	}
}
