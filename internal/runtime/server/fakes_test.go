package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth/berth/internal/runtime/image"
	"github.com/berth/berth/internal/runtime/network"
	"github.com/berth/berth/internal/runtime/oci"
	"github.com/berth/berth/internal/runtime/pause"
	"github.com/berth/berth/internal/runtime/spec"
)

// fakeOCI is an in-memory oci.Runtime whose containers exit when killed or
// when the test says so.
type fakeOCI struct {
	mu         sync.Mutex
	containers map[string]*fakeTask
	nextPid    int
	failCreate error
	// acted lists, per container, the calls that act on it (RunDetached, Kill,
	// Delete, UpdateResources), whether they succeeded or not.
	acted map[string][]string
}

type fakeTask struct {
	state oci.State
	spec  *specs.Spec    // the spec it was started with
	pause *pause.Process // set for a pause process
	done  chan struct{}  // closed once the task is no longer running
}

func (t *fakeTask) finish() {
	select {
	case <-t.done:
	default:
		close(t.done)
	}
}

func newFakeOCI() *fakeOCI {
	return &fakeOCI{containers: map[string]*fakeTask{}, nextPid: 1000, acted: map[string][]string{}}
}

// actedOn returns the calls that acted on container id.
func (f *fakeOCI) actedOn(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.acted[id])
}

// specOf is what the fake runs: as runc, the bundle's config.json; a
// pause process has no bundle, only its command.
func (f *fakeOCI) specOf(o oci.RunOptions) (*specs.Spec, error) {
	if o.Pause != nil {
		if err := o.Pause.Validate(); err != nil {
			return nil, err
		}
		return &specs.Spec{Process: &specs.Process{Args: o.Pause.Args}, Root: &specs.Root{Path: o.Pause.Root}}, nil
	}
	if o.Spec != nil {
		if err := os.MkdirAll(o.BundleDir, 0o700); err != nil {
			return nil, err
		}
		if err := oci.WriteSpec(o.BundleDir, o.Spec); err != nil {
			return nil, err
		}
	}
	return oci.ReadSpec(o.BundleDir)
}

func (f *fakeOCI) RunDetached(ctx context.Context, o oci.RunOptions) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acted[o.ID] = append(f.acted[o.ID], "RunDetached")
	if f.failCreate != nil {
		return 0, f.failCreate
	}
	if _, ok := f.containers[o.ID]; ok {
		return 0, fmt.Errorf("container %s exists", o.ID)
	}
	spec, err := f.specOf(o)
	if err != nil {
		return 0, err
	}
	f.nextPid++
	t := &fakeTask{state: oci.State{ID: o.ID, Status: oci.StatusRunning, Pid: f.nextPid, StartedAt: time.Now()}, spec: spec, pause: o.Pause, done: make(chan struct{})}
	f.containers[o.ID] = t
	return t.state.Pid, nil
}

func (f *fakeOCI) task(id string) (*fakeTask, error) {
	t, ok := f.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, fs.ErrNotExist)
	}
	return t, nil
}

// exit ends a container's process with code, as if it returned.
func (f *fakeOCI) exit(id string, code int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.containers[id]; ok && t.state.Status != oci.StatusStopped {
		t.state.Status, t.state.ExitCode, t.state.FinishedAt = oci.StatusStopped, code, time.Now()
		t.finish()
	}
}

// loseMonitor makes a container unmanageable, as when its monitor is killed.
func (f *fakeOCI) loseMonitor(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.containers[id]; ok && t.state.Status != oci.StatusStopped {
		t.state.Status, t.state.Broken = oci.StatusUnknown, "monitor is gone"
		t.finish()
	}
}

func (f *fakeOCI) Kill(ctx context.Context, id string, sig syscall.Signal, all bool) error {
	f.mu.Lock()
	f.acted[id] = append(f.acted[id], "Kill")
	_, err := f.task(id)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	f.exit(id, 128+int32(sig))
	return nil
}

func (f *fakeOCI) Wait(ctx context.Context, id string) (oci.State, error) {
	f.mu.Lock()
	t, err := f.task(id)
	f.mu.Unlock()
	if err != nil {
		return oci.State{}, err
	}
	select {
	case <-t.done:
		return f.State(ctx, id)
	case <-ctx.Done():
		return oci.State{}, ctx.Err()
	}
}

func (f *fakeOCI) Delete(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acted[id] = append(f.acted[id], "Delete")
	if _, err := f.task(id); err != nil {
		return err
	}
	delete(f.containers, id)
	return nil
}

func (f *fakeOCI) State(ctx context.Context, id string) (oci.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.task(id)
	if err != nil {
		return oci.State{}, err
	}
	return t.state, nil
}

func (f *fakeOCI) Exec(ctx context.Context, id string, o oci.ExecOptions) (int32, error) {
	if len(o.Process.Args) > 0 && o.Process.Args[0] == "sleep" {
		<-ctx.Done()
		return -1, ctx.Err()
	}
	fmt.Fprintf(o.Stdout, "ran %v", o.Process.Args)
	fmt.Fprint(o.Stderr, "err")
	return 3, nil
}

func (f *fakeOCI) Attach(ctx context.Context, id string, o oci.AttachOptions) error { return nil }
func (f *fakeOCI) UpdateResources(ctx context.Context, id string, r *specs.LinuxResources) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acted[id] = append(f.acted[id], "UpdateResources")
	_, err := f.task(id)
	return err
}

// startedSpec is the spec a container was started with.
func (f *fakeOCI) startedSpec(id string) *specs.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.containers[id]; ok {
		return t.spec
	}
	return nil
}
func (f *fakeOCI) Stats(ctx context.Context, id string) (oci.Stats, error) {
	return oci.Stats{Timestamp: time.Now(), CPUUsageNanos: 10, MemoryWorkingSet: 20}, nil
}
func (f *fakeOCI) ReopenLog(ctx context.Context, id string) error { return nil }

func (f *fakeOCI) Recover(ctx context.Context) ([]oci.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []oci.State
	for _, t := range f.containers {
		out = append(out, t.state)
	}
	return out, nil
}

// fakeImages knows a fixed set of images and records prepared rootfses.
type fakeImages struct {
	mu     sync.Mutex
	dir    string
	known  map[string]Image
	rootfs map[string]string // container ID -> image ID
	// halfMade are rootfses without a mount record (a crash while they
	// were made): recovery can neither restore them nor say their image.
	halfMade map[string]bool
}

func newFakeImages(dir string, refs ...string) *fakeImages {
	f := &fakeImages{dir: dir, known: map[string]Image{}, rootfs: map[string]string{}, halfMade: map[string]bool{}}
	for i, ref := range refs {
		f.known[ref] = Image{ID: fmt.Sprintf("sha256:%064d", i), RepoTags: []string{ref}}
	}
	return f
}

func (f *fakeImages) Resolve(ctx context.Context, ref string) (Image, error) {
	img, ok := f.known[ref]
	if !ok {
		return Image{}, status.Errorf(codes.NotFound, "image %q not found", ref)
	}
	return img, nil
}

func (f *fakeImages) Ensure(ctx context.Context, ref string) (Image, error) {
	return f.Resolve(ctx, ref)
}

func (f *fakeImages) PrepareRootfs(ctx context.Context, imageID, containerID string, opts image.RootfsOptions) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir := filepath.Join(f.dir, containerID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f.rootfs[containerID] = imageID
	return dir, nil
}

func (f *fakeImages) RemoveRootfs(ctx context.Context, containerID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.rootfs, containerID)
	delete(f.halfMade, containerID)
	return os.RemoveAll(filepath.Join(f.dir, containerID))
}

func (f *fakeImages) RecoverRootfs(ctx context.Context) (RootfsRecovery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := RootfsRecovery{Failed: map[string]error{}}
	for id := range f.rootfs {
		out.InUse = append(out.InUse, id)
	}
	for id := range f.halfMade {
		out.Failed[id] = errors.New("no mount record")
	}
	return out, nil
}

func (f *fakeImages) inUse() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.rootfs)
}

// fakeSpecs makes a minimal spec, rejects containers annotated "invalid"
// and remembers the last container input it was given.
type fakeSpecs struct {
	mu     sync.Mutex
	last   *ContainerConfig
	lastIn spec.Input
}

func (*fakeSpecs) Pause(ctx context.Context, in spec.PauseInput) (*pause.Process, error) {
	return &pause.Process{
		Args: []string{"/pause"}, Root: in.RootfsPath, UID: 65535, GID: 65535,
		Namespaces: in.Namespaces, CgroupsPath: "/berth/" + in.ID,
	}, nil
}

// ValidateSandbox rejects sandboxes annotated "invalid".
func (*fakeSpecs) ValidateSandbox(cfg *PodSandboxConfig) error {
	if _, bad := cfg.GetAnnotations()["invalid"]; bad {
		return status.Error(codes.InvalidArgument, "invalid sandbox config")
	}
	return nil
}

func (f *fakeSpecs) Container(ctx context.Context, in spec.Input) (*specs.Spec, error) {
	f.mu.Lock()
	f.last, f.lastIn = in.Container, in
	f.mu.Unlock()
	if _, bad := in.Container.GetAnnotations()["invalid"]; bad {
		return nil, status.Error(codes.InvalidArgument, "invalid container config")
	}
	args := append(in.Container.GetCommand(), in.Container.GetArgs()...)
	user := specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000, 5}}
	return &specs.Spec{Process: &specs.Process{Args: args, Cwd: "/", Env: []string{"PATH=/bin"}, User: user}, Root: &specs.Root{Path: in.RootfsPath}}, nil
}

// fakeNetwork hands out addresses and counts attachments and teardowns.
type fakeNetwork struct {
	mu        sync.Mutex
	attached  map[string]bool
	n         int
	teardowns int
	fail      error
	// panicReady makes Ready panic, as a bug deep in a handler would.
	panicReady atomic.Bool
}

func newFakeNetwork() *fakeNetwork { return &fakeNetwork{attached: map[string]bool{}} }

func (f *fakeNetwork) Setup(ctx context.Context, pod network.Pod) (network.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return network.Result{}, f.fail
	}
	f.n++
	f.attached[pod.ID] = true
	return network.Result{IP: fmt.Sprintf("10.0.0.%d", f.n)}, nil
}

func (f *fakeNetwork) Teardown(ctx context.Context, pod network.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.attached, pod.ID)
	f.teardowns++
	return nil
}

func (f *fakeNetwork) Ready(ctx context.Context) error {
	if f.panicReady.Load() {
		panic("fake network: Ready panicked")
	}
	return nil
}
func (f *fakeNetwork) SetPodCIDR(string) error { return nil }

func (f *fakeNetwork) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.attached)
}
