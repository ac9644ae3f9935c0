package cri

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/images"
)

// TestStartServesCRIAndPullsFromTheMirror shows the harness itself works: a
// containerd answers CRI and pulls a test image through the mirror.
func TestStartServesCRIAndPullsFromTheMirror(t *testing.T) {
	c := Start(t)
	if c.Version.RuntimeName != "containerd" || c.Version.RuntimeApiVersion != "v1" {
		t.Fatalf("Version = %+v, want containerd speaking v1", c.Version)
	}
	resp, err := c.Client.Images.PullImage(t.Context(), &runtimeapi.PullImageRequest{
		Image: &runtimeapi.ImageSpec{Image: Image(images.Busybox)},
	})
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if resp.ImageRef == "" {
		t.Fatal("pull returned no image ref")
	}
}

// TestRestartKeepsContainersRunning: containerd restarted underneath keeps
// its sandboxes (the shims outlive it) and the client reconnects.
func TestRestartKeepsContainersRunning(t *testing.T) {
	c := Start(t)
	resp, err := c.Client.Runtime.RunPodSandbox(t.Context(), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "uid-p"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.Restart(t)
	st, err := c.Client.Runtime.PodSandboxStatus(t.Context(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: resp.PodSandboxId})
	if err != nil || st.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandbox after restart: %v, %v", st, err)
	}
}
