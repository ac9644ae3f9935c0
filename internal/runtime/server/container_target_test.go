package server

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// targetingConfig is what the kubelet sends for an ephemeral container
// with a targetContainerName: PID namespace mode TARGET on the target's ID.
func targetingConfig(name, targetID string) *runtimeapi.ContainerConfig {
	cfg := containerConfig(name)
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: targetID},
	}}
	return cfg
}

func (h *harness) createTargeting(sbID string, sbCfg *runtimeapi.PodSandboxConfig, name, targetID string) (string, error) {
	resp, err := h.client.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{
		PodSandboxId: sbID, Config: targetingConfig(name, targetID), SandboxConfig: sbCfg,
	})
	return resp.GetContainerId(), err
}

// lastTargetPid is the TargetPid the spec generator was last given.
func (h *harness) lastTargetPid() int {
	h.specs.mu.Lock()
	defer h.specs.mu.Unlock()
	return h.specs.lastIn.TargetPid
}

// TestTargetModeJoinsTheRunningTargetsProcess checks that a container in
// PID namespace mode TARGET gets its spec built on the target's running
// process (by ID or unique prefix, as every container RPC takes it), and
// still after a runtime restart, when records are reloaded and the pid is
// asked of the surviving monitor.
func TestTargetModeJoinsTheRunningTargetsProcess(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	target := h.createContainer(sb, sbCfg, "app")
	h.startContainer(target)
	st, err := h.oci.State(ctx, target)
	if err != nil || st.Pid <= 0 {
		t.Fatalf("state of the running target: %+v, %v", st, err)
	}

	debug, err := h.createTargeting(sb, sbCfg, "debug", target[:12])
	if err != nil {
		t.Fatalf("CreateContainer in TARGET mode: %v", err)
	}
	if got := h.lastTargetPid(); got != st.Pid {
		t.Fatalf("spec built with target pid %d, want the target's %d", got, st.Pid)
	}
	h.startContainer(debug)

	h.restart()
	if _, err := h.createTargeting(sb, sbCfg, "debug-after-restart", target); err != nil {
		t.Fatalf("CreateContainer in TARGET mode after a restart: %v", err)
	}
	if got := h.lastTargetPid(); got != st.Pid {
		t.Fatalf("after a restart, spec built with target pid %d, want the target's %d", got, st.Pid)
	}
}

// TestTargetModeRefusals checks each target a TARGET container cannot
// join: the refusal has containerd's code and leaves nothing behind (no
// container listed, the name free for a good request).
func TestTargetModeRefusals(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	other, otherCfg := h.runSandbox("other")
	elsewhere := h.createContainer(other, otherCfg, "elsewhere")
	h.startContainer(elsewhere)
	created := h.createContainer(sb, sbCfg, "created")
	exited := h.createContainer(sb, sbCfg, "exited")
	h.startContainer(exited)
	h.oci.exit(exited, 0)
	running := h.createContainer(sb, sbCfg, "running")
	h.startContainer(running)

	for _, tc := range []struct {
		name, target string
		code         codes.Code
	}{
		{"no target ID", "", codes.InvalidArgument},
		{"no such container", "0123456789abcdef", codes.NotFound},
		{"target in another sandbox", elsewhere, codes.InvalidArgument},
		{"target never started", created, codes.FailedPrecondition},
		{"target exited", exited, codes.FailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.listContainers(ctx)
			_, err := h.createTargeting(sb, sbCfg, "debug", tc.target)
			wantCode(t, err, tc.code)
			if after := h.listContainers(ctx); after != before {
				t.Fatalf("%d containers after a refused create, %d before", after, before)
			}
		})
	}
	if _, err := h.createTargeting(sb, sbCfg, "debug", running); err != nil {
		t.Fatalf("CreateContainer on a running target after the refusals: %v", err)
	}
}

// TestTargetExitedBeforeStart checks that StartContainer does not run a
// TARGET container whose target has exited since it was created (its pid
// in config.json may name another process by now): the start fails as
// FailedPrecondition, recorded as StartError, without the OCI runtime.
func TestTargetExitedBeforeStart(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	target := h.createContainer(sb, sbCfg, "app")
	h.startContainer(target)
	debug, err := h.createTargeting(sb, sbCfg, "debug", target)
	if err != nil {
		t.Fatalf("CreateContainer in TARGET mode: %v", err)
	}
	h.oci.exit(target, 0)

	_, err = h.client.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: debug})
	wantCode(t, err, codes.FailedPrecondition)
	if st := h.containerStatus(debug); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Reason != "StartError" {
		t.Fatalf("status after the refused start: %+v", st)
	}
	if acted := h.oci.actedOn(debug); len(acted) != 0 {
		t.Fatalf("the refused start called the OCI runtime: %v", acted)
	}
}

func (h *harness) listContainers(ctx context.Context) int {
	h.t.Helper()
	list, err := h.client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		h.t.Fatalf("ListContainers: %v", err)
	}
	return len(list.Containers)
}
