package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/runtime/oci"
)

// TestCreateContainerLeavesTheOCIRuntimeToStart checks that a created
// container is its record, rootfs and bundle (config.json included) with no
// task, and that StartContainer runs that config.json.
func TestCreateContainerLeavesTheOCIRuntimeToStart(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	id := h.createContainer(sb, sbCfg, "app")

	if acted := h.oci.actedOn(id); len(acted) != 0 {
		t.Fatalf("CreateContainer called the OCI runtime: %v", acted)
	}
	if _, err := h.oci.State(ctx, id); err == nil {
		t.Fatal("a created container has a task")
	}
	written, err := oci.ReadSpec(h.srv.bundleDir(id))
	if err != nil || !slices.Equal(written.Process.Args, []string{"sh"}) {
		t.Fatalf("config.json after create: %+v, %v", written, err)
	}
	list, err := h.client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil || len(list.Containers) != 1 || list.Containers[0].State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Fatalf("ListContainers = %v, %v", list, err)
	}
	if st := h.containerStatus(id); st.State != runtimeapi.ContainerState_CONTAINER_CREATED || st.StartedAt != 0 || st.CreatedAt == 0 {
		t.Fatalf("status of a created container: %+v", st)
	}

	h.startContainer(id)
	if st := h.containerStatus(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 {
		t.Fatalf("status after start: %+v", st)
	}
	if st, err := h.oci.State(ctx, id); err != nil || st.Status != oci.StatusRunning {
		t.Fatalf("task after start: %+v, %v", st, err)
	}
	if got := h.oci.startedSpec(id); got == nil || !slices.Equal(got.Process.Args, []string{"sh"}) {
		t.Fatalf("started with %+v, want the spec CreateContainer wrote", got)
	}
}

// TestNeverStartedContainer drives every RPC that may meet a created,
// never started container: none may act on the OCI runtime, stopping
// leaves it created, and removing it releases everything it held.
func TestNeverStartedContainer(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := h.subscribe(ctx)
	sb, sbCfg := h.runSandbox("pod")
	id := h.createContainer(sb, sbCfg, "idle")
	nextEvent(t, events, id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	bundle := h.srv.bundleDir(id)

	if _, err := h.client.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10}); err != nil {
		t.Fatalf("StopContainer of a created container: %v", err)
	}
	if st := h.containerStatus(id); st.State != runtimeapi.ContainerState_CONTAINER_CREATED || st.FinishedAt != 0 {
		t.Fatalf("after StopContainer: %+v, want still created", st)
	}
	_, err := h.client.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"ls"}})
	wantCode(t, err, codes.FailedPrecondition)
	_, err = h.client.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}, Stdout: true})
	wantCode(t, err, codes.FailedPrecondition)
	_, err = h.client.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdout: true})
	wantCode(t, err, codes.FailedPrecondition)
	_, err = h.client.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	wantCode(t, err, codes.FailedPrecondition)
	stats, err := h.client.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil || stats.Stats.GetAttributes().GetId() != id || stats.Stats.Cpu != nil || stats.Stats.Memory != nil {
		t.Fatalf("ContainerStats of a created container = %v, %v", stats, err)
	}
	all, err := h.client.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
	if err != nil || len(all.Stats) != 1 || all.Stats[0].Cpu != nil {
		t.Fatalf("ListContainerStats with a created container = %v, %v", all, err)
	}
	_, err = h.client.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id,
		Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 64 << 20}})
	if err != nil {
		t.Fatalf("UpdateContainerResources of a created container: %v", err)
	}
	if acted := h.oci.actedOn(id); len(acted) != 0 {
		t.Fatalf("the OCI runtime was called for a never started container: %v", acted)
	}

	for range 2 {
		if _, err := h.client.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
			t.Fatalf("RemoveContainer: %v", err)
		}
	}
	nextEvent(t, events, id, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	if acted := h.oci.actedOn(id); len(acted) != 0 {
		t.Fatalf("removing a never started container called the OCI runtime: %v", acted)
	}
	_, err = h.client.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	wantCode(t, err, codes.NotFound)
	if _, err := os.Stat(bundle); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("bundle left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.stateDir, "containers", id+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("record left: %v", err)
	}
	if h.images.inUse() != 1 { // the pause container's
		t.Fatalf("container rootfs left: %d in use", h.images.inUse())
	}
	h.createContainer(sb, sbCfg, "idle") // the name is free again
}

// TestUpdateOfCreatedContainerAppliesAtStart changes a created container's
// limits: the change is in the spec it starts with, on top of what it had.
func TestUpdateOfCreatedContainerAppliesAtStart(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	id := h.createContainer(sb, sbCfg, "app")
	shares := uint64(512)
	spec, err := oci.ReadSpec(h.srv.bundleDir(id))
	if err != nil {
		t.Fatal(err)
	}
	spec.Linux = &specs.Linux{Resources: &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}}}
	if err := oci.WriteSpec(h.srv.bundleDir(id), spec); err != nil {
		t.Fatal(err)
	}
	res := &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 64 << 20, CpuQuota: 50000, CpuPeriod: 100000}
	if _, err := h.client.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: res}); err != nil {
		t.Fatal(err)
	}
	if got := h.containerStatus(id).Resources.GetLinux(); got.GetMemoryLimitInBytes() != 64<<20 {
		t.Fatalf("status resources after update: %v", got)
	}
	h.startContainer(id)
	r := h.oci.startedSpec(id).Linux.Resources
	if r.Memory == nil || r.Memory.Limit == nil || *r.Memory.Limit != 64<<20 ||
		r.CPU.Quota == nil || *r.CPU.Quota != 50000 || r.CPU.Period == nil || *r.CPU.Period != 100000 {
		t.Fatalf("started with resources %+v, want the update's", r)
	}
	if r.CPU.Shares == nil || *r.CPU.Shares != 512 {
		t.Fatalf("the update dropped the CPU shares it did not set: %+v", r.CPU)
	}
	// Running now: the update goes to the OCI runtime.
	if _, err := h.client.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: res}); err != nil {
		t.Fatal(err)
	}
	if acted := h.oci.actedOn(id); !slices.Equal(acted, []string{"RunDetached", "UpdateResources"}) {
		t.Fatalf("OCI calls %v", acted)
	}
}

// TestFailedStartIsStartErrorAndLeavesNoTask makes the OCI runtime fail
// the start: the container is exited with StartError, nothing of the task
// is left, and removal releases the rest.
func TestFailedStartIsStartErrorAndLeavesNoTask(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	id := h.createContainer(sb, sbCfg, "app")

	h.oci.failCreate = errors.New("runc exploded")
	_, err := h.client.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	wantCode(t, err, codes.Internal)
	h.oci.failCreate = nil
	st := h.containerStatus(id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 128 || st.Reason != "StartError" ||
		!strings.Contains(st.Message, "runc exploded") || st.FinishedAt == 0 {
		t.Fatalf("status after a failed start: %+v", st)
	}
	if _, err := h.oci.State(ctx, id); err == nil {
		t.Fatal("a task is left after the failed start")
	}
	_, err = h.client.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	wantCode(t, err, codes.FailedPrecondition)
	if _, err := h.client.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.srv.bundleDir(id)); !errors.Is(err, os.ErrNotExist) || h.images.inUse() != 1 {
		t.Fatalf("bundle (%v) or rootfs (%d in use) left", err, h.images.inUse())
	}
}

// TestCreatedContainersOfStoppedAndRemovedSandbox: stopping the pod leaves
// its never started containers created (and no longer startable, as their
// sandbox is gone); removing it removes them and all they hold.
func TestCreatedContainersOfStoppedAndRemovedSandbox(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	a := h.createContainer(sb, sbCfg, "a")
	b := h.createContainer(sb, sbCfg, "b")
	if _, err := h.client.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a, b} {
		if st := h.containerStatus(id); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
			t.Fatalf("%s after StopPodSandbox: %+v", id, st)
		}
	}
	_, err := h.client.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: a})
	wantCode(t, err, codes.FailedPrecondition)
	if st := h.containerStatus(a); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Reason != "StartError" {
		t.Fatalf("start in a stopped sandbox: %+v", st)
	}
	if _, err := h.client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	list, _ := h.client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if len(list.Containers) != 0 || h.images.inUse() != 0 {
		t.Fatalf("containers %v or rootfs (%d) left", list.Containers, h.images.inUse())
	}
	if acted := h.oci.actedOn(b); len(acted) != 0 {
		t.Fatalf("the OCI runtime was called for a never started container: %v", acted)
	}
	if entries, _ := os.ReadDir(filepath.Join(h.stateDir, "bundles")); len(entries) != 0 {
		t.Fatalf("bundles left: %v", entries)
	}
}

// TestRestartCleansInterruptedStarts: a created container that has a task
// when the runtime comes back was being started when the runtime died
// (its monitor running, or only half set up); the task is removed and the
// container reported exited, while one with no task stays created.
func TestRestartCleansInterruptedStarts(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	started := h.createContainer(sb, sbCfg, "started")
	halfStarted := h.createContainer(sb, sbCfg, "half")
	created := h.createContainer(sb, sbCfg, "created")

	h.stop()
	// The start's monitor ran; its answer never reached a record.
	if _, err := h.oci.RunDetached(ctx, oci.RunOptions{ID: started, BundleDir: h.srv.bundleDir(started)}); err != nil {
		t.Fatal(err)
	}
	// The start died before its monitor was recorded.
	h.oci.mu.Lock()
	h.oci.containers[halfStarted] = &fakeTask{state: oci.State{ID: halfStarted, Status: oci.StatusUnknown, Broken: "half-created: no monitor was recorded"}, done: make(chan struct{})}
	h.oci.mu.Unlock()
	h.start()

	for _, id := range []string{started, halfStarted} {
		st := h.containerStatus(id)
		if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Reason != "Unknown" || st.ExitCode == 0 || st.FinishedAt == 0 {
			t.Errorf("container whose start was interrupted: %+v", st)
		}
		if _, err := h.oci.State(ctx, id); err == nil {
			t.Errorf("task of an interrupted start left: %s", id)
		}
	}
	if st := h.containerStatus(created); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Fatalf("created container after restart: %+v", st)
	}
	h.startContainer(created)
	if st := h.containerStatus(created); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("created container started after restart: %+v", st)
	}
}
