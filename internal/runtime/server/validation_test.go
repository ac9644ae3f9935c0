package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestBadInputGetsCodeAndChangesNothing drives every validating RPC with
// bad requests and checks the code and that no object appeared.
func TestBadInputGetsCodeAndChangesNothing(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, _ := h.runSandbox("pod")
	noMeta := sandboxConfig("x")
	noMeta.Metadata.Uid = ""
	badPort := sandboxConfig("y")
	badPort.PortMappings = []*runtimeapi.PortMapping{{HostPort: 70000, ContainerPort: 80}}
	userns := sandboxConfig("userns")
	userns.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD}}}}
	invalidSpec := containerConfig("bad")
	invalidSpec.Annotations = map[string]string{"invalid": ""}
	missingImage := containerConfig("noimg")
	missingImage.Image.Image = "absent:1"

	cases := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"run without config", func() error {
			_, err := h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{})
			return err
		}, codes.InvalidArgument},
		{"run without uid", func() error {
			_, err := h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: noMeta})
			return err
		}, codes.InvalidArgument},
		{"run with bad port", func() error {
			_, err := h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: badPort})
			return err
		}, codes.InvalidArgument},
		{"run in a user namespace", func() error {
			_, err := h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: userns})
			return err
		}, codes.InvalidArgument},
		{"run with unknown handler", func() error {
			_, err := h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("z"), RuntimeHandler: "kata"})
			return err
		}, codes.InvalidArgument},
		{"status without id", func() error {
			_, err := h.client.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{})
			return err
		}, codes.InvalidArgument},
		{"status of unknown", func() error {
			_, err := h.client.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "nope"})
			return err
		}, codes.NotFound},
		{"create without config", func() error {
			_, err := h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb})
			return err
		}, codes.InvalidArgument},
		{"create in unknown sandbox", func() error {
			_, err := h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "nope", Config: containerConfig("a")})
			return err
		}, codes.NotFound},
		{"create with absent image", func() error {
			_, err := h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: missingImage})
			return err
		}, codes.NotFound},
		{"create with invalid spec", func() error {
			_, err := h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: invalidSpec})
			return err
		}, codes.InvalidArgument},
		{"start unknown", func() error {
			_, err := h.client.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: "nope"})
			return err
		}, codes.NotFound},
		{"exec sync without cmd", func() error {
			_, err := h.client.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "nope"})
			return err
		}, codes.InvalidArgument},
		{"stop with negative timeout", func() error {
			_, err := h.client.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "x", Timeout: -1})
			return err
		}, codes.InvalidArgument},
		{"update without resources", func() error {
			_, err := h.client.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: "x"})
			return err
		}, codes.InvalidArgument},
		{"port-forward to bad port", func() error {
			_, err := h.client.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sb, Port: []int32{0}})
			return err
		}, codes.InvalidArgument},
		{"checkpoint", func() error {
			_, err := h.client.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{ContainerId: "x"})
			return err
		}, codes.Unimplemented},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.call(), tc.want) })
	}

	sbs, _ := h.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	cs, _ := h.client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if len(sbs.Items) != 1 || len(cs.Containers) != 0 || h.images.inUse() != 1 || h.net.count() != 1 {
		t.Fatalf("bad input left objects: sandboxes=%d containers=%d rootfs=%d attached=%d",
			len(sbs.Items), len(cs.Containers), h.images.inUse(), h.net.count())
	}
	for _, dir := range []string{"bundles", "monitors-of-the-fake"} {
		if left, _ := os.ReadDir(filepath.Join(h.stateDir, dir)); len(left) != 0 {
			t.Fatalf("%s left: %v", dir, left)
		}
	}
}

// TestFailedCreatesLeaveNothing makes the spec generator, the OCI runtime
// and the network fail part-way and checks every earlier step was undone.
func TestFailedCreatesLeaveNothing(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")

	bad := containerConfig("a")
	bad.Annotations = map[string]string{"invalid": "the spec generator refuses it"}
	_, err := h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: bad})
	wantCode(t, err, codes.InvalidArgument)
	h.oci.failCreate = errors.New("runc exploded")
	_, err = h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("other")})
	wantCode(t, err, codes.Internal)
	h.oci.failCreate = nil

	h.net.fail = errors.New("no addresses left")
	_, err = h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("third")})
	wantCode(t, err, codes.Internal)
	h.net.fail = nil

	if h.images.inUse() != 1 || h.net.count() != 1 {
		t.Fatalf("rootfs=%d attached=%d after failed creates", h.images.inUse(), h.net.count())
	}
	// Only the good sandbox remains: its record and dir, and pinned namespaces.
	for dir, want := range map[string]int{"sandboxes": 2, "netns": 1, "utsns": 1, "ipcns": 1, "bundles": 0} {
		entries, _ := os.ReadDir(filepath.Join(h.stateDir, dir))
		if len(entries) != want {
			t.Fatalf("%s holds %v, want %d entries", dir, entries, want)
		}
	}
	sbs, _ := h.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if len(sbs.Items) != 1 {
		t.Fatalf("sandboxes: %v", sbs.Items)
	}
	// The names are free: the same creates now succeed.
	h.createContainer(sb, sbCfg, "a")
	h.runSandbox("other")
}
