package server_test

import (
	"fmt"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/runtimetest"
	"github.com/berth/berth/internal/testkit/images"
)

// BenchmarkCreateStartContainer times CreateContainer and StartContainer
// of a sleeping busybox through the real runtime (runc, berth-monitor, the
// overlay image store), each phase reported in ms per container; stopping
// and removing the container is left out of the timing.
func BenchmarkCreateStartContainer(b *testing.B) {
	r := runtimetest.Start(b, monitor)
	ctx := b.Context()
	image := r.Pull(b, images.Busybox)
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "bench", Namespace: "default", Uid: "uid-bench"},
		LogDirectory: b.TempDir(),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	sb, err := r.Client.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		b.Fatalf("RunPodSandbox: %v", err)
	}
	var create, start time.Duration
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("c%d", i)
		t0 := time.Now()
		c, err := r.Client.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: sbCfg,
			Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: image},
				Command: []string{"sleep", "3600"}, LogPath: name + ".log"}})
		if err != nil {
			b.Fatalf("CreateContainer: %v", err)
		}
		t1 := time.Now()
		if _, err := r.Client.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
			b.Fatalf("StartContainer: %v", err)
		}
		create, start = create+t1.Sub(t0), start+time.Since(t1)
		b.StopTimer()
		if _, err := r.Client.Runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.ContainerId}); err != nil {
			b.Fatalf("RemoveContainer: %v", err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(create.Microseconds())/1000/float64(b.N), "create-ms/op")
	b.ReportMetric(float64(start.Microseconds())/1000/float64(b.N), "start-ms/op")
}

// BenchmarkRunPodSandbox times RunPodSandbox through the real runtime
// (CNI, berth-monitor, runc), for a pod whose containers share its PID
// namespace (a pause container, as critest's benchmark pods) and for one
// whose containers do not (no pause container, as kubelet's default);
// stopping and removing the pod is left out of the timing.
func BenchmarkRunPodSandbox(b *testing.B) {
	r := runtimetest.Start(b, monitor)
	ctx := b.Context()
	for _, pid := range []runtimeapi.NamespaceMode{runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_CONTAINER} {
		b.Run(pid.String(), func(b *testing.B) {
			for i := range b.N {
				cfg := &runtimeapi.PodSandboxConfig{
					Metadata:     &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("bench-%d", i), Namespace: "default", Uid: fmt.Sprintf("uid-%s-%d", pid, i)},
					LogDirectory: b.TempDir(),
					Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
						NamespaceOptions: &runtimeapi.NamespaceOption{Pid: pid}}},
				}
				sb, err := r.Client.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
				if err != nil {
					b.Fatalf("RunPodSandbox: %v", err)
				}
				b.StopTimer()
				if _, err := r.Client.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil {
					b.Fatalf("StopPodSandbox: %v", err)
				}
				if _, err := r.Client.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil {
					b.Fatalf("RemovePodSandbox: %v", err)
				}
				b.StartTimer()
			}
		})
	}
}
