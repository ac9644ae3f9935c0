package server

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRunPodSandboxRuntimeHandlers: a sandbox may name the default handler
// ("" or "runc") or one the runtime was started with; any other handler is
// refused with InvalidArgument before anything exists. Status reports the
// default handler and every extra one.
func TestRunPodSandboxRuntimeHandlers(t *testing.T) {
	h := newHarness(t)
	h.handlers = []string{"test-handler"}
	h.restart()
	ctx := context.Background()

	run := func(name, handler string) (string, error) {
		cfg := sandboxConfig(name)
		cfg.LogDirectory = filepath.Join(t.TempDir(), "logs")
		resp, err := h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: handler})
		return resp.GetPodSandboxId(), err
	}

	_, err := run("unknown", "no-such-handler")
	wantCode(t, err, codes.InvalidArgument)
	list, err := h.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetItems()) != 0 {
		t.Fatalf("a refused handler left sandboxes: %v", list.GetItems())
	}

	for _, handler := range []string{"", "runc", "test-handler"} {
		id, err := run("pod-"+handler, handler)
		if err != nil {
			t.Fatalf("handler %q: %v", handler, err)
		}
		st, err := h.client.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.GetStatus().GetRuntimeHandler(); got != handler {
			t.Errorf("sandbox run with handler %q reports handler %q", handler, got)
		}
	}

	status, err := h.client.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rh := range status.GetRuntimeHandlers() {
		names = append(names, rh.GetName())
	}
	if !slices.Equal(names, []string{"", "test-handler"}) {
		t.Fatalf("Status reports handlers %q, want the default and test-handler", names)
	}
}
