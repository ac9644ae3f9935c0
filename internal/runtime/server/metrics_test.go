package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/cgroupstats"
)

// fakeCgroups answers a fixed sample for every pid it knows.
type fakeCgroups struct {
	sample cgroupstats.Sample
	ifaces []cgroupstats.Interface
}

func (f *fakeCgroups) ReadPid(pid int) (cgroupstats.Sample, error) {
	if pid <= 0 {
		return cgroupstats.Sample{}, fmt.Errorf("no pid")
	}
	return f.sample, nil
}

func (f *fakeCgroups) ReadNetwork(pid int) ([]cgroupstats.Interface, error) {
	return f.ifaces, nil
}

// WritableLayer makes the fake image store a WritableLayers: the fake
// rootfs directory stands for the writable layer.
func (f *fakeImages) WritableLayer(containerID string) string {
	return filepath.Join(f.dir, containerID)
}

func TestListMetricDescriptorsDescribeEveryCatalogEntry(t *testing.T) {
	h := newHarness(t)
	resp, err := h.client.ListMetricDescriptors(context.Background(), &runtimeapi.ListMetricDescriptorsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Descriptors) != len(metricCatalog) {
		t.Fatalf("%d descriptors, catalog has %d", len(resp.Descriptors), len(metricCatalog))
	}
	seen := map[string]bool{}
	for _, d := range resp.Descriptors {
		if d.Help == "" || len(d.LabelKeys) < len(metricLabelKeys) || seen[d.Name] {
			t.Errorf("bad or duplicate descriptor %+v", d)
		}
		seen[d.Name] = true
	}
}

func TestListPodSandboxMetricsReportsEveryDescribedSeries(t *testing.T) {
	h := newHarness(t)
	h.cgroups = &fakeCgroups{
		sample: cgroupstats.Sample{
			CPU:    cgroupstats.CPU{UsageNanos: 3_500_000_000, UserNanos: 2e9, SystemNanos: 1e9, PeriodMicros: 100000, Shares: 512},
			Memory: cgroupstats.Memory{Usage: 4096, WorkingSet: 2048, Limit: 1 << 20, PageFaults: 7, MajorPageFaults: 1},
			Pids:   cgroupstats.Pids{Current: 3, Limit: 100},
			Blkio:  []cgroupstats.BlkioEntry{{Major: 8, Minor: 0, Op: "Read", Bytes: 512, Ops: 1}, {Major: 8, Minor: 0, Op: "Write", Bytes: 1024, Ops: 2}},
			Procs:  cgroupstats.Procs{Processes: 2, Threads: 3, FileDescriptors: 9, Sockets: 1},
		},
		ifaces: []cgroupstats.Interface{{Name: "eth0", RxBytes: 100, TxPackets: 5}},
	}
	h.restart()
	sbID, sbCfg := h.runSandbox("metrics")
	id := h.createContainer(sbID, sbCfg, "app")
	h.startContainer(id)
	if err := os.WriteFile(filepath.Join(h.images.WritableLayer(id), "data"), make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	stopped := h.createContainer(sbID, sbCfg, "never-started")

	resp, err := h.client.ListPodSandboxMetrics(context.Background(), &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.PodMetrics) != 1 || resp.PodMetrics[0].PodSandboxId != sbID {
		t.Fatalf("pod metrics %+v, want one for %s", resp.PodMetrics, sbID)
	}
	pm := resp.PodMetrics[0]
	if len(pm.ContainerMetrics) != 1 || pm.ContainerMetrics[0].ContainerId != id {
		t.Fatalf("container metrics for %v, want only the running %s (not %s)", pm.ContainerMetrics, id, stopped)
	}
	byName := map[string][]*runtimeapi.Metric{}
	for _, m := range append(append([]*runtimeapi.Metric{}, pm.Metrics...), pm.ContainerMetrics[0].Metrics...) {
		byName[m.Name] = append(byName[m.Name], m)
	}
	for _, d := range metricCatalog {
		ms := byName[d.name]
		if len(ms) == 0 {
			t.Errorf("no sample of %s", d.name)
		}
		for _, m := range ms {
			if len(m.LabelValues) != len(metricLabelKeys)+len(d.extra) || m.MetricType != d.kind || m.Value == nil {
				t.Errorf("%s: labels %v type %v value %v", d.name, m.LabelValues, m.MetricType, m.Value)
			}
		}
	}
	value := func(name string) uint64 { return byName[name][0].GetValue().GetValue() }
	checks := map[string]uint64{
		"container_cpu_usage_seconds_total": 3, "container_spec_cpu_shares": 512, "container_memory_working_set_bytes": 2048,
		"container_spec_memory_limit_bytes": 1 << 20, "container_threads_max": 100, "container_file_descriptors": 9,
		"container_network_receive_bytes_total": 100, "container_fs_writes_bytes_total": 1024,
	}
	for name, want := range checks {
		if got := value(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if got := value("container_fs_usage_bytes"); got < 8192 {
		t.Errorf("container_fs_usage_bytes = %d, want at least the 8192 bytes written", got)
	}
	if got := int64(value("container_last_seen")); got < time.Now().Add(-time.Hour).Unix() {
		t.Errorf("container_last_seen = %d", got)
	}
	if lv := byName["container_memory_rss"][0].LabelValues; lv[0] != "app" || lv[1] != id || lv[5] != "metrics" {
		t.Errorf("container labels %v", lv)
	}
	if lv := byName["container_network_receive_bytes_total"][0].LabelValues; lv[0] != "POD" || lv[6] != "eth0" {
		t.Errorf("pod network labels %v", lv)
	}
}
