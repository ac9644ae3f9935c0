package server

import (
	"context"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestImageVolumes(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	sb, sbCfg := h.runSandbox("pod")
	volume := func(readOnly bool, sub string) *runtimeapi.ContainerConfig {
		cfg := containerConfig("vol")
		cfg.Mounts = []*runtimeapi.Mount{{
			ContainerPath: "/mnt/img", Readonly: readOnly, ImageSubPath: sub,
			Image: &runtimeapi.ImageSpec{Image: testImage},
		}}
		return cfg
	}
	for _, tc := range []struct {
		cfg  *runtimeapi.ContainerConfig
		want codes.Code
	}{
		{volume(false, ""), codes.InvalidArgument},
		{volume(true, "../etc"), codes.InvalidArgument},
		{volume(true, "absent"), codes.InvalidArgument},
	} {
		_, err := h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: tc.cfg, SandboxConfig: sbCfg})
		wantCode(t, err, tc.want)
	}
	if h.images.inUse() != 1 {
		t.Fatalf("rejected image volumes left %d rootfses", h.images.inUse())
	}

	resp, err := h.client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: volume(true, ""), SandboxConfig: sbCfg})
	if err != nil {
		t.Fatal(err)
	}
	if h.images.inUse() != 3 { // pause, container, image volume
		t.Fatalf("rootfses in use = %d", h.images.inUse())
	}
	st := h.containerStatus(resp.ContainerId)
	if len(st.Mounts) != 1 || st.Mounts[0].Image.GetImageRef() != h.images.known[testImage].ID {
		t.Fatalf("status mounts = %v", st.Mounts)
	}
	// The spec saw a plain read-only bind of the prepared image root.
	m := h.specs.last.GetMounts()[0]
	if m.Image != nil || !m.Readonly || m.HostPath != filepath.Join(h.images.dir, resp.ContainerId+"-vol0") {
		t.Fatalf("spec mount = %v", m)
	}
	if _, err := h.client.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: resp.ContainerId}); err != nil {
		t.Fatal(err)
	}
	if h.images.inUse() != 1 {
		t.Fatalf("image volume not released: %d in use", h.images.inUse())
	}
}
