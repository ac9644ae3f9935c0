package server

import (
	"context"
	"fmt"
	"sync"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestCreateRacingSandboxRemovalLeavesNothing creates containers while the
// sandbox is being removed: each create either lands before the removal
// (and is removed with the sandbox) or fails; nothing is left behind.
func TestCreateRacingSandboxRemovalLeavesNothing(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
				PodSandboxId: sb, Config: containerConfig(fmt.Sprintf("c%d", i)), SandboxConfig: sbCfg,
			})
		}()
	}
	if _, err := h.client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	list, err := h.client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Containers) != 0 || h.images.inUse() != 0 {
		t.Fatalf("left behind: %d containers, %d rootfses", len(list.Containers), h.images.inUse())
	}
}

// TestConcurrentStopsAndRemovesOfOneSandboxAllSucceed: CRI makes
// StopPodSandbox and RemovePodSandbox idempotent, and an agent's pod worker
// and its garbage collector may well remove the same sandbox at once: every
// call succeeds, whichever finishes the work.
func TestConcurrentStopsAndRemovesOfOneSandboxAllSucceed(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	if _, err := h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb, Config: containerConfig("c"), SandboxConfig: sbCfg,
	}); err != nil {
		t.Fatal(err)
	}
	h.stopAndRemoveConcurrently(sb, 16)
	list, err := h.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("sandboxes left: %v (err %v)", list.GetItems(), err)
	}
}

// stopAndRemoveConcurrently sends n StopPodSandbox and RemovePodSandbox
// calls for sb at once, alternating, and fails the test on any error: CRI
// asks both to be idempotent.
func (h *harness) stopAndRemoveConcurrently(sb string, n int) {
	h.t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				_, err = h.client.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb})
			} else {
				_, err = h.client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb})
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			h.t.Errorf("concurrent stop/remove: %v", err)
		}
	}
}

// TestRemoveAfterStopTearsDownOnce: kubelet stops a sandbox, may stop it
// again, then removes it; the network is torn down by the first stop only
// (each teardown execs every CNI plugin), and the sandbox is still gone.
func TestRemoveAfterStopTearsDownOnce(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, _ := h.runSandbox("pod")
	for range 2 {
		if _, err := h.client.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	h.net.mu.Lock()
	teardowns := h.net.teardowns
	h.net.mu.Unlock()
	if teardowns != 1 {
		t.Fatalf("network torn down %d times, want once", teardowns)
	}
	list, err := h.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("sandboxes left: %v (err %v)", list.GetItems(), err)
	}
}
