package gc

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/cri"
	"github.com/berth/berth/internal/runtime/runtimetest"
	testcri "github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/wait"
)

// berthMonitor is the berth-monitor binary runtimetest.Main built for
// this package's berth runtimes.
var berthMonitor string

func TestMain(m *testing.M) { runtimetest.Main(m, &berthMonitor) }

// startRuntime starts a real CRI runtime for the life of t and returns a
// client to it: all the node helper needs of a runtime.
type startRuntime func(t *testing.T) *cri.Client

// runtimes are the CRI runtimes every collector test runs against: the
// agent must work the same on berth runtime and on containerd. Both pull
// the test images under the same names (testcri.Image).
var runtimes = []struct {
	name  string
	start startRuntime
}{
	{"berth", func(t *testing.T) *cri.Client { return runtimetest.Start(t, berthMonitor).Client }},
	{"containerd", func(t *testing.T) *cri.Client { return testcri.Start(t).Client }},
}

// onEachRuntime runs test as one subtest per runtime, each on a node of
// its own.
func onEachRuntime(t *testing.T, test func(t *testing.T, n *node)) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) { test(t, &node{t: t, client: r.start(t)}) })
	}
}

// node drives a real runtime directly through CRI, creating sandboxes and
// containers labelled as the agent's pod workers label them.
type node struct {
	t      *testing.T
	client *cri.Client
}

func (n *node) rt() runtimeapi.RuntimeServiceClient { return n.client.Runtime }
func (n *node) is() runtimeapi.ImageServiceClient   { return n.client.Images }

// sandbox is one pod sandbox and its config (for CreateContainer).
type sandbox struct {
	id  string
	cfg *runtimeapi.PodSandboxConfig
}

// runSandbox starts attempt of pod uid's sandbox on the host network (no
// CNI needed for what GC looks at).
func (n *node) runSandbox(uid string, attempt uint32) sandbox {
	n.t.Helper()
	return n.startSandbox(uid, attempt, "")
}

// runSandboxWithCgroup starts pod uid's first sandbox under cgroupParent,
// as the pod workers place it.
func (n *node) runSandboxWithCgroup(uid, cgroupParent string) sandbox {
	n.t.Helper()
	return n.startSandbox(uid, 0, cgroupParent)
}

func (n *node) startSandbox(uid string, attempt uint32, cgroupParent string) sandbox {
	n.t.Helper()
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "pod-" + uid, Uid: uid, Namespace: "default", Attempt: attempt},
		Labels:       map[string]string{labelPodUID: uid, "io.kubernetes.pod.name": "pod-" + uid, "io.kubernetes.pod.namespace": "default"},
		LogDirectory: n.t.TempDir(),
		Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: cgroupParent, SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
	resp, err := n.rt().RunPodSandbox(n.t.Context(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		n.t.Fatalf("RunPodSandbox %s/%d: %v", uid, attempt, err)
	}
	return sandbox{id: resp.PodSandboxId, cfg: cfg}
}

func (n *node) stopSandbox(sb sandbox) {
	n.t.Helper()
	if _, err := n.rt().StopPodSandbox(n.t.Context(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.id}); err != nil {
		n.t.Fatal(err)
	}
}

// container creates attempt of container name in sb from image running
// cmd; labels nil means the pod worker's labels. With start, it is
// started, and with a command that exits, waited for until it has exited.
type containerSpec struct {
	name    string
	attempt uint32
	image   string
	cmd     []string
	start   bool
	exits   bool
	labels  map[string]string
	mounts  []*runtimeapi.Mount
}

func (n *node) container(sb sandbox, c containerSpec) string {
	n.t.Helper()
	ctx := n.t.Context()
	n.pull(c.image)
	labels := c.labels
	if labels == nil {
		labels = map[string]string{labelPodUID: sb.cfg.Metadata.Uid, labelContainerName: c.name}
	}
	resp, err := n.rt().CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.id, SandboxConfig: sb.cfg, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: c.name, Attempt: c.attempt},
		Image:    &runtimeapi.ImageSpec{Image: c.image},
		Command:  c.cmd,
		Labels:   labels,
		Mounts:   c.mounts,
		LogPath:  fmt.Sprintf("%s_%d.log", c.name, c.attempt),
	}})
	if err != nil {
		n.t.Fatalf("CreateContainer %s/%d: %v", c.name, c.attempt, err)
	}
	if !c.start {
		return resp.ContainerId
	}
	if _, err := n.rt().StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.ContainerId}); err != nil {
		n.t.Fatalf("StartContainer %s/%d: %v", c.name, c.attempt, err)
	}
	if c.exits {
		err := wait.PollTrue(ctx, time.Minute, fmt.Sprintf("container %s/%d to exit", c.name, c.attempt), func(ctx context.Context) (bool, error) {
			st, err := n.rt().ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: resp.ContainerId})
			return err == nil && st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED, nil
		})
		if err != nil {
			n.t.Fatal(err)
		}
	}
	return resp.ContainerId
}

func (n *node) pull(image string) string {
	n.t.Helper()
	resp, err := n.is().PullImage(n.t.Context(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		n.t.Fatalf("pull %s: %v", image, err)
	}
	return resp.ImageRef
}

// imageID is the runtime's ID of image.
func (n *node) imageID(image string) string {
	n.t.Helper()
	st, err := n.is().ImageStatus(n.t.Context(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil || st.Image == nil {
		n.t.Fatalf("image status %s: %v", image, err)
	}
	return st.Image.Id
}

// containerIDs and sandboxIDs are what the runtime holds now.
func (n *node) containerIDs() map[string]bool {
	n.t.Helper()
	resp, err := n.rt().ListContainers(n.t.Context(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		n.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, c := range resp.Containers {
		out[c.Id] = true
	}
	return out
}

func (n *node) sandboxIDs() map[string]bool {
	n.t.Helper()
	resp, err := n.rt().ListPodSandbox(n.t.Context(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		n.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range resp.Items {
		out[s.Id] = true
	}
	return out
}

// imagesByID maps the runtime's image IDs to their sizes.
func (n *node) imagesByID() map[string]uint64 {
	n.t.Helper()
	resp, err := n.is().ListImages(n.t.Context(), &runtimeapi.ListImagesRequest{})
	if err != nil {
		n.t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, img := range resp.Images {
		out[img.Id] = img.Size
	}
	return out
}

// podSource is the informer cache as the test sets it.
type podSource struct {
	mu    sync.Mutex
	uids  []string
	known bool
}

func (p *podSource) set(known bool, uids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.uids, p.known = uids, known
}

func (p *podSource) Pods() ([]*corev1.Pod, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*corev1.Pod
	for _, uid := range p.uids {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}})
	}
	return out, p.known
}

// fixedUsage is an image filesystem whose size the test sets.
type fixedUsage struct {
	mu    sync.Mutex
	stats FsStats
	err   error
	reads int
}

func (u *fixedUsage) set(stats FsStats, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stats, u.err = stats, err
}

func (u *fixedUsage) ImageFs(context.Context) (FsStats, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reads++
	return u.stats, u.err
}

func (u *fixedUsage) readCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.reads
}
