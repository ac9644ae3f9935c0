package server

import (
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/cgroupstats"
)

// metricSet accumulates the series of one container (or of the pod) with
// the labels they share.
type metricSet struct {
	defs   map[string]metricDef
	ts     int64
	labels []string // values of metricLabelKeys
	out    []*runtimeapi.Metric
}

// add appends one sample; extra are the values of the series' own labels.
// A name or label count not in the catalog is a bug the package's tests
// catch (every catalog entry is checked against a produced sample).
func (m *metricSet) add(name string, v uint64, extra ...string) {
	d, ok := m.defs[name]
	if !ok || len(extra) != len(d.extra) {
		return
	}
	m.out = append(m.out, &runtimeapi.Metric{
		Name: name, Timestamp: m.ts, MetricType: d.kind,
		LabelValues: append(append([]string{}, m.labels...), extra...),
		Value:       &runtimeapi.UInt64Value{Value: v},
	})
}

func seconds(nanos uint64) uint64 { return nanos / uint64(time.Second) }

// addCgroup adds the series read from the container's cgroups and processes.
func (m *metricSet) addCgroup(s cgroupstats.Sample) {
	c, mem := s.CPU, s.Memory
	m.add("container_cpu_usage_seconds_total", seconds(c.UsageNanos), "total")
	m.add("container_cpu_user_seconds_total", seconds(c.UserNanos))
	m.add("container_cpu_system_seconds_total", seconds(c.SystemNanos))
	m.add("container_cpu_cfs_periods_total", c.Periods)
	m.add("container_cpu_cfs_throttled_periods_total", c.ThrottledPeriods)
	m.add("container_cpu_cfs_throttled_seconds_total", seconds(c.ThrottledNanos))
	m.add("container_spec_cpu_period", c.PeriodMicros)
	m.add("container_spec_cpu_shares", c.Shares)

	m.add("container_memory_usage_bytes", mem.Usage)
	m.add("container_memory_max_usage_bytes", mem.MaxUsage)
	m.add("container_memory_working_set_bytes", mem.WorkingSet)
	m.add("container_memory_cache", mem.Cache)
	m.add("container_memory_rss", mem.RSS)
	m.add("container_memory_mapped_file", mem.MappedFile)
	m.add("container_memory_swap", mem.Swap)
	m.add("container_memory_kernel_usage", mem.Kernel)
	m.add("container_memory_failcnt", mem.Failcnt)
	m.add("container_memory_failures_total", mem.PageFaults, "pgfault", "container")
	m.add("container_memory_failures_total", mem.MajorPageFaults, "pgmajfault", "container")
	m.add("container_oom_events_total", mem.OOMKills)
	m.add("container_spec_memory_limit_bytes", mem.Limit)
	m.add("container_spec_memory_swap_limit_bytes", mem.SwapLimit)

	m.add("container_processes", s.Procs.Processes)
	m.add("container_threads", max(s.Procs.Threads, s.Pids.Current))
	m.add("container_threads_max", s.Pids.Limit)
	m.add("container_file_descriptors", s.Procs.FileDescriptors)
	m.add("container_sockets", s.Procs.Sockets)
	m.addBlkio(s.Blkio)
}

// addBlkio adds per-device I/O, both cAdvisor's raw blkio series and the
// fs_* read/write totals derived from it.
func (m *metricSet) addBlkio(entries []cgroupstats.BlkioEntry) {
	for _, e := range entries {
		dev := fmt.Sprintf("%d:%d", e.Major, e.Minor)
		m.add("container_blkio_device_usage_total", e.Bytes, dev, fmt.Sprint(e.Major), fmt.Sprint(e.Minor), e.Op)
		switch e.Op {
		case "Read":
			m.add("container_fs_reads_bytes_total", e.Bytes, dev)
			m.add("container_fs_reads_total", e.Ops, dev)
		case "Write":
			m.add("container_fs_writes_bytes_total", e.Bytes, dev)
			m.add("container_fs_writes_total", e.Ops, dev)
		}
	}
}

// addFilesystem adds the writable layer's usage and its filesystem's capacity.
func (m *metricSet) addFilesystem(fs cgroupstats.Filesystem) {
	m.add("container_fs_usage_bytes", fs.UsageBytes, fs.Device)
	m.add("container_fs_limit_bytes", fs.LimitBytes, fs.Device)
	m.add("container_fs_inodes_total", fs.InodesTotal, fs.Device)
	m.add("container_fs_inodes_free", fs.InodesFree, fs.Device)
}

// addNetwork adds the pod network namespace's interface counters.
func (m *metricSet) addNetwork(ifaces []cgroupstats.Interface) {
	for _, i := range ifaces {
		m.add("container_network_receive_bytes_total", i.RxBytes, i.Name)
		m.add("container_network_receive_packets_total", i.RxPackets, i.Name)
		m.add("container_network_receive_errors_total", i.RxErrors, i.Name)
		m.add("container_network_receive_packets_dropped_total", i.RxDropped, i.Name)
		m.add("container_network_transmit_bytes_total", i.TxBytes, i.Name)
		m.add("container_network_transmit_packets_total", i.TxPackets, i.Name)
		m.add("container_network_transmit_errors_total", i.TxErrors, i.Name)
		m.add("container_network_transmit_packets_dropped_total", i.TxDropped, i.Name)
	}
}
