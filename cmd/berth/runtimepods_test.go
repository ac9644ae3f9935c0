package main

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/cri"
)

// removeRuntimePods stops and removes every sandbox the runtime at
// endpoint holds. Containers outlive the runtime by design, so a test that
// ends (or fails) with pods running must remove them itself, or their
// addresses on the shared pod bridge would answer for the next test's pods.
func removeRuntimePods(ctx context.Context, endpoint string) error {
	rt, _, err := cri.Dial(ctx, endpoint)
	if err != nil {
		return fmt.Errorf("runtime gone before its pods were removed: %w", err)
	}
	defer rt.Close()
	list, err := rt.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	for _, sb := range list.GetItems() {
		if _, err := rt.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return fmt.Errorf("stop sandbox %s: %w", sb.Id, err)
		}
		if _, err := rt.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return fmt.Errorf("remove sandbox %s: %w", sb.Id, err)
		}
	}
	return nil
}
