package server

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The CRI metrics are the cAdvisor container_* series the kubelet would
// otherwise scrape, so dashboards and the kubelet's /metrics/cadvisor see
// the same names whichever stats provider is in use.

// metricLabelKeys label every series: which container of which pod. Pod
// level series (network) are labelled container "POD", as cAdvisor labels
// the sandbox's.
var metricLabelKeys = []string{"container", "id", "image", "name", "namespace", "pod"}

// metricDef describes one series; extra are its labels after metricLabelKeys.
type metricDef struct {
	name, help string
	kind       runtimeapi.MetricType
	extra      []string
}

const (
	counter = runtimeapi.MetricType_COUNTER
	gauge   = runtimeapi.MetricType_GAUGE
)

// metricCatalog is every series berth reports, in the order it is described.
var metricCatalog = []metricDef{
	{"container_blkio_device_usage_total", "Blkio device bytes usage", counter, []string{"device", "major", "minor", "operation"}},
	{"container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", counter, nil},
	{"container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", counter, nil},
	{"container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", counter, nil},
	{"container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", counter, nil},
	{"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", counter, []string{"cpu"}},
	{"container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", counter, nil},
	{"container_file_descriptors", "Number of open file descriptors for the container.", gauge, nil},
	{"container_fs_inodes_free", "Number of available Inodes", gauge, []string{"device"}},
	{"container_fs_inodes_total", "Number of Inodes", gauge, []string{"device"}},
	{"container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", gauge, []string{"device"}},
	{"container_fs_reads_bytes_total", "Cumulative count of bytes read", counter, []string{"device"}},
	{"container_fs_reads_total", "Cumulative count of reads completed", counter, []string{"device"}},
	{"container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", gauge, []string{"device"}},
	{"container_fs_writes_bytes_total", "Cumulative count of bytes written", counter, []string{"device"}},
	{"container_fs_writes_total", "Cumulative count of writes completed", counter, []string{"device"}},
	{"container_last_seen", "Last time a container was seen by the exporter", gauge, nil},
	{"container_memory_cache", "Number of bytes of page cache memory.", gauge, nil},
	{"container_memory_failcnt", "Number of memory usage hits limits", counter, nil},
	{"container_memory_failures_total", "Cumulative count of memory allocation failures.", counter, []string{"failure_type", "scope"}},
	{"container_memory_kernel_usage", "Size of kernel memory allocated in bytes.", gauge, nil},
	{"container_memory_mapped_file", "Size of memory mapped files in bytes.", gauge, nil},
	{"container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes", gauge, nil},
	{"container_memory_rss", "Size of RSS in bytes.", gauge, nil},
	{"container_memory_swap", "Container swap usage in bytes.", gauge, nil},
	{"container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", gauge, nil},
	{"container_memory_working_set_bytes", "Current working set in bytes.", gauge, nil},
	{"container_network_receive_bytes_total", "Cumulative count of bytes received", counter, []string{"interface"}},
	{"container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", counter, []string{"interface"}},
	{"container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", counter, []string{"interface"}},
	{"container_network_receive_packets_total", "Cumulative count of packets received", counter, []string{"interface"}},
	{"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", counter, []string{"interface"}},
	{"container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", counter, []string{"interface"}},
	{"container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", counter, []string{"interface"}},
	{"container_network_transmit_packets_total", "Cumulative count of packets transmitted", counter, []string{"interface"}},
	{"container_oom_events_total", "Count of out of memory events observed for the container", counter, nil},
	{"container_processes", "Number of processes running inside the container.", gauge, nil},
	{"container_sockets", "Number of open sockets for the container.", gauge, nil},
	{"container_spec_cpu_period", "CPU period of the container.", gauge, nil},
	{"container_spec_cpu_shares", "CPU share of the container.", gauge, nil},
	{"container_spec_memory_limit_bytes", "Memory limit for the container.", gauge, nil},
	{"container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.", gauge, nil},
	{"container_start_time_seconds", "Start time of the container since unix epoch in seconds.", gauge, nil},
	{"container_threads", "Number of threads running inside the container", gauge, nil},
	{"container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero", gauge, nil},
}

// metricDefsByName indexes metricCatalog.
func metricDefsByName() map[string]metricDef {
	out := make(map[string]metricDef, len(metricCatalog))
	for _, d := range metricCatalog {
		out[d.name] = d
	}
	return out
}
