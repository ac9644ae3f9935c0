package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	nriapi "github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// recordingNRI records the events the server raises, adds an env variable
// at creation, and vetoes what the test asks it to.
type recordingNRI struct {
	noNRI
	mu      sync.Mutex
	events  []string
	vetoRun bool
}

func (r *recordingNRI) record(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recordingNRI) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recordingNRI) RunPodSandbox(_ context.Context, pod *nriapi.PodSandbox) error {
	r.record("RunPodSandbox " + pod.GetName())
	if r.vetoRun {
		return errors.New("vetoed")
	}
	return nil
}

func (r *recordingNRI) StopPodSandbox(_ context.Context, pod *nriapi.PodSandbox) error {
	r.record("StopPodSandbox " + pod.GetName())
	return nil
}

func (r *recordingNRI) RemovePodSandbox(_ context.Context, pod *nriapi.PodSandbox) error {
	r.record("RemovePodSandbox " + pod.GetName())
	return nil
}

func (r *recordingNRI) CreateContainer(_ context.Context, _ *nriapi.PodSandbox, c *nriapi.Container, spec *specs.Spec) error {
	r.record("CreateContainer " + c.GetName())
	spec.Process.Env = append(spec.Process.Env, "FROM_NRI=1")
	return nil
}

func (r *recordingNRI) StartContainer(_ context.Context, _ *nriapi.PodSandbox, c *nriapi.Container) error {
	r.record("StartContainer " + c.GetName())
	return nil
}

func (r *recordingNRI) StopContainer(_ context.Context, _ *nriapi.PodSandbox, c *nriapi.Container) error {
	r.record("StopContainer " + c.GetName())
	return nil
}

func (r *recordingNRI) RemoveContainer(_ context.Context, _ *nriapi.PodSandbox, c *nriapi.Container) error {
	r.record("RemoveContainer " + c.GetName())
	return nil
}

func TestNRIHearsLifecycleOnceAndInOrder(t *testing.T) {
	h := newHarness(t)
	rec := &recordingNRI{}
	h.nri = rec
	h.restart()
	ctx := context.Background()

	sbID, sbCfg := h.runSandbox("web")
	id := h.createContainer(sbID, sbCfg, "app")
	var spec specs.Spec
	if data, err := os.ReadFile(filepath.Join(h.srv.bundleDir(id), "config.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(spec.Process.Env, "FROM_NRI=1") {
		t.Errorf("the plugin's adjustment is not in the spec given to the OCI runtime: %v", spec.Process.Env)
	}
	h.startContainer(id)
	idle := h.createContainer(sbID, sbCfg, "idle") // never started
	if _, err := h.client.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: idle}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second stop must not be heard again
		if _, err := h.client.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sbID}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sbID}); err != nil {
		t.Fatal(err)
	}
	// A container never started is created and removed, never started
	// or stopped. The pod's containers are removed in no set order.
	want := []string{"RunPodSandbox web", "CreateContainer app", "StartContainer app", "CreateContainer idle", "StopContainer app",
		"StopPodSandbox web", "RemoveContainer app", "RemoveContainer idle", "RemovePodSandbox web"}
	got := rec.seen()
	if i, j := slices.Index(got, "RemoveContainer idle"), slices.Index(got, "RemoveContainer app"); i >= 0 && j == i+1 {
		got[i], got[j] = got[j], got[i]
	}
	if !slices.Equal(got, want) {
		t.Errorf("NRI heard\n%v\nwant\n%v", got, want)
	}
}

func TestNRIVetoOfRunPodSandboxLeavesNothing(t *testing.T) {
	h := newHarness(t)
	h.nri = &recordingNRI{vetoRun: true}
	h.restart()
	ctx := context.Background()
	cfg := sandboxConfig("vetoed")
	if _, err := h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err == nil {
		t.Fatal("RunPodSandbox succeeded despite the plugin's veto")
	}
	list, err := h.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("sandboxes after a veto: %v (%v)", list.GetItems(), err)
	}
	if n := h.images.inUse(); n != 0 {
		t.Errorf("%d rootfs left in use after a veto", n)
	}
	h.nri.(*recordingNRI).vetoRun = false
	if _, err := h.client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err != nil {
		t.Fatalf("retry after the veto: %v", err)
	}
}
