package gc

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/podcgroup"
	"github.com/berth/berth/internal/agent/podcgroup/podcgrouptest"
	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
)

// sandboxLister is a runtime that only lists sandboxes: all the cgroup
// sweep asks of it.
type sandboxLister struct {
	runtimeapi.RuntimeServiceClient // nil: any other call panics
	sandboxes                       []*runtimeapi.PodSandbox
}

func (l sandboxLister) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: l.sandboxes}, nil
}

// TestCollectPodCgroupsRemovesOnlyOrphans: the sweep removes the cgroups of
// pods the agent does not have and the runtime holds no sandbox of, in
// every hierarchy, empty descendants first; it keeps those of pods that
// exist, of pods with a sandbox (found by label or by metadata), and
// cgroups still in use.
func TestCollectPodCgroupsRemovesOnlyOrphans(t *testing.T) {
	hierarchies := []string{"/cg/memory", "/cg/systemd", "/cg/unified"}
	fs := podcgrouptest.New(hierarchies...)
	for _, h := range hierarchies {
		fs.Mkdir(h+"/kubepods/burstable/podexists", false)
		fs.Mkdir(h+"/kubepods/besteffort/podlabelled", false)
		fs.Mkdir(h+"/kubepods/podmetadata", false)
		fs.Mkdir(h+"/kubepods/besteffort/podorphan/stale-container", false)
		fs.Mkdir(h+"/kubepods/podorphan-guaranteed", false)
	}
	fs.Mkdir("/cg/memory/kubepods/burstable/podbusy", true)
	rt := sandboxLister{sandboxes: []*runtimeapi.PodSandbox{
		{Id: "s1", Labels: map[string]string{labelPodUID: "labelled"}, Metadata: &runtimeapi.PodSandboxMetadata{}},
		{Id: "s2", Metadata: &runtimeapi.PodSandboxMetadata{Uid: "metadata"}},
	}}
	pods := &podSource{}
	c, err := New(Config{NodeName: "node-a", Runtime: rt, Pods: pods, Policy: DefaultPolicy,
		Cgroups: podcgroup.NewCleaner(fs, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}

	// Until the pods are known, every pod would look deleted.
	if done, err := c.CollectPodCgroups(t.Context()); done || err != nil {
		t.Fatalf("CollectPodCgroups before the pods are known = %v, %v; want false, nil", done, err)
	}
	if got := fs.Removed(); len(got) != 0 {
		t.Fatalf("removed %v before the pods were known", got)
	}

	pods.set(true, "exists")
	if done, err := c.CollectPodCgroups(t.Context()); !done || err != nil {
		t.Fatalf("CollectPodCgroups = %v, %v; want true, nil", done, err)
	}
	var want []string
	for _, h := range hierarchies {
		want = append(want,
			h+"/kubepods/besteffort/podorphan/stale-container", h+"/kubepods/besteffort/podorphan",
			h+"/kubepods/podorphan-guaranteed")
	}
	// Pods in any order; each pod's stale child before it (the cleaner's
	// tests check the order).
	got := fs.Removed()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("removed %v, want %v", got, want)
	}
	for _, kept := range []string{"/cg/unified/kubepods/burstable/podexists", "/cg/systemd/kubepods/besteffort/podlabelled",
		"/cg/memory/kubepods/podmetadata", "/cg/memory/kubepods/burstable/podbusy"} {
		if !fs.Exists(kept) {
			t.Errorf("%s removed", kept)
		}
	}
}

// TestCollectContainersRemovesDeletedPodsCgroupOnBothRuntimes runs a pod
// in a real runtime with the agent's cgroup parent; once the pod is
// deleted and stopped, one collection removes its sandbox and its cgroup
// in every hierarchy. A sweep then removes an orphaned cgroup (with an
// empty child, as a crashed runtime leaves) and keeps an existing pod's.
func TestCollectContainersRemovesDeletedPodsCgroupOnBothRuntimes(t *testing.T) {
	onEachRuntime(t, testCollectContainersRemovesDeletedPodsCgroup)
}

func testCollectContainersRemovesDeletedPodsCgroup(t *testing.T, n *node) {
	cleaner := podcgroup.NewCleaner(podcgroup.HostOS{}, nil)
	const gone, orphan, kept = "uid-gc-cgroup-gone", "uid-gc-cgroup-orphan", "uid-gc-cgroup-kept"
	// Whatever a failure leaves, the machine does not keep it.
	t.Cleanup(func() {
		for _, uid := range []string{gone, orphan, kept} {
			if _, err := cleaner.RemovePod(types.UID(uid)); err != nil {
				t.Log(err)
			}
		}
	})

	sb := n.runSandboxWithCgroup(gone, podcgroup.Parent(corev1.PodQOSBestEffort, gone))
	n.container(sb, containerSpec{name: "app", image: cri.Image(images.Busybox), cmd: []string{"sleep", "3600"}, start: true})
	if dirs := podcgrouptest.HostPodDirs(t, gone); len(dirs) == 0 {
		t.Fatal("the runtime created no cgroup for the pod under its cgroup parent")
	}
	n.stopSandbox(sb)

	pods := &podSource{}
	pods.set(true, kept)
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{NodeName: "node-a", Runtime: n.rt(), Images: n.is(), Pods: pods, Policy: DefaultPolicy,
		Cgroups: cleaner, Metrics: metrics, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CollectContainers(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n.sandboxIDs()[sb.id] {
		t.Fatal("the deleted pod's sandbox was not collected")
	}
	if dirs := podcgrouptest.HostPodDirs(t, gone); len(dirs) != 0 {
		t.Errorf("the deleted pod's cgroup is left: %v", dirs)
	}
	if got := removedCount(t, metrics, "pod-cgroup"); got != 1 {
		t.Errorf("gc removed_total{kind=pod-cgroup} = %v, want 1", got)
	}

	// An orphan with an empty child and an existing pod's cgroup, made
	// where the runtime made the pod's (every hierarchy with /kubepods).
	roots, err := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if err != nil || len(roots) == 0 {
		t.Fatalf("no kubepods cgroup: %v", err)
	}
	for _, root := range roots {
		for _, dir := range []string{root + "/besteffort/pod" + orphan + "/stale", root + "/burstable/pod" + kept} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if done, err := c.CollectPodCgroups(t.Context()); !done || err != nil {
		t.Fatalf("CollectPodCgroups = %v, %v", done, err)
	}
	if dirs := podcgrouptest.HostPodDirs(t, orphan); len(dirs) != 0 {
		t.Errorf("the orphaned cgroup is left: %v", dirs)
	}
	if dirs := podcgrouptest.HostPodDirs(t, kept); len(dirs) != len(roots) {
		t.Errorf("the existing pod's cgroups = %v, want one in each of %v", dirs, roots)
	}
}
