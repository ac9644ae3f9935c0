package runtime

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/images"
)

// TestPodSandboxMetricsFromRealCgroups runs a container under runc and
// checks ListPodSandboxMetrics reports its real cgroup, process, writable
// layer and pod network figures.
func TestPodSandboxMetricsFromRealCgroups(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	if _, err := e.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: images.Busybox}}); err != nil {
		t.Fatalf("PullImage: %v", err)
	}
	sb := e.runSandbox("web")
	id := e.runContainer(sb, "app", "sh", "-c", "sleep 100000 & exec sleep 100000")
	e.execSync(id, "dd", "if=/dev/zero", "of=/written", "bs=1024", "count=256")

	resp, err := e.rt.ListPodSandboxMetrics(ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var pod *runtimeapi.PodSandboxMetrics
	for _, pm := range resp.PodMetrics {
		if pm.PodSandboxId == sb {
			pod = pm
		}
	}
	if pod == nil || len(pod.ContainerMetrics) != 1 || pod.ContainerMetrics[0].ContainerId != id {
		t.Fatalf("metrics of sandbox %s / container %s missing: %v", sb, id, resp.PodMetrics)
	}
	values := map[string]uint64{}
	for _, m := range append(append([]*runtimeapi.Metric{}, pod.Metrics...), pod.ContainerMetrics[0].Metrics...) {
		if _, dup := values[m.Name]; !dup {
			values[m.Name] = m.GetValue().GetValue()
		}
	}
	if values["container_processes"] != 2 {
		t.Errorf("container_processes = %d, want the 2 sleeps", values["container_processes"])
	}
	if values["container_memory_usage_bytes"] == 0 || values["container_threads"] < 2 || values["container_file_descriptors"] == 0 {
		t.Errorf("no usage read from the cgroup: %v", values)
	}
	if values["container_spec_cpu_period"] == 0 || values["container_spec_cpu_shares"] == 0 {
		t.Errorf("no CPU settings read from the cgroup: %v", values)
	}
	if values["container_fs_usage_bytes"] < 256<<10 || values["container_fs_limit_bytes"] < values["container_fs_usage_bytes"] {
		t.Errorf("writable layer: usage %d limit %d, want >= the 256KiB written", values["container_fs_usage_bytes"], values["container_fs_limit_bytes"])
	}
	if _, ok := values["container_network_transmit_packets_total"]; !ok {
		t.Errorf("no pod network series (eth0): %v", pod.Metrics)
	}
}
