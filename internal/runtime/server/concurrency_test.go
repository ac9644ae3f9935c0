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
