package gc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestCollectImagesOnBothRuntimes fills a real runtime with images in
// every role — used by a running container, used by a dead one, pinned
// (the sandbox image), used earlier, never used, pulled too recently — sets
// the filesystem's usage over the high threshold and checks exactly which
// images one pass removes; then sets more usage than can be freed and
// checks the FreeDiskSpaceFailed event.
func TestCollectImagesOnBothRuntimes(t *testing.T) { onEachRuntime(t, testCollectImagesOnBothRuntimes) }

func testCollectImagesOnBothRuntimes(t *testing.T, n *node) {
	ref := cri.Image
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC))
	usage := &fixedUsage{}
	recorder := record.NewFakeRecorder(10)
	pods := &podSource{}
	pods.set(true, "uid-live")
	policy := DefaultPolicy
	policy.PinnedImages = []string{ref(images.Pause)}
	c, err := New(Config{NodeName: "node-a", Runtime: n.rt(), Images: n.is(), Pods: pods, Usage: usage,
		Recorder: recorder, Clock: clk, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}

	sb := n.runSandbox("uid-live", 0) // pulls the pause image
	n.container(sb, containerSpec{name: "web", image: ref(images.Busybox), cmd: []string{"sleep", "3600"}, start: true})
	n.container(sb, containerSpec{name: "job", image: ref(images.Httpd), cmd: []string{"true"}, start: true, exits: true})
	earlier := n.container(sb, containerSpec{name: "once", image: ref(images.Layered), cmd: []string{"true"}, start: true, exits: true})
	never := n.pull(ref(images.Entrypoint))
	id := n.imageID
	ids := map[string]string{}
	for _, name := range []string{images.Pause, images.Busybox, images.Httpd, images.Layered, images.Entrypoint, images.NonRoot} {
		if name != images.NonRoot {
			ids[name] = id(ref(name))
		}
	}
	if never != ids[images.Entrypoint] && id(never) != ids[images.Entrypoint] {
		t.Fatalf("pulled %s, status says %s", never, ids[images.Entrypoint])
	}
	distinct := map[string]string{}
	for name, id := range ids {
		if other, dup := distinct[id]; dup {
			t.Fatalf("test images %s and %s share the ID %s: the roles would blur", name, other, id)
		}
		distinct[id] = name
	}

	// A pass under the threshold removes nothing but notes what is in use:
	// Layered, through the container about to be removed.
	usage.set(FsStats{CapacityBytes: 100 << 30, AvailableBytes: 50 << 30}, nil)
	if err := c.CollectImages(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := n.rt().RemoveContainer(t.Context(), &runtimeapi.RemoveContainerRequest{ContainerId: earlier}); err != nil {
		t.Fatal(err)
	}
	clk.Step(3 * time.Minute) // past MinImageAge for everything seen so far
	n.pull(ref(images.NonRoot))
	ids[images.NonRoot] = id(ref(images.NonRoot))
	if err := c.CollectImages(t.Context()); err != nil { // NonRoot first seen now
		t.Fatal(err)
	}

	// Usage exactly at 85% with 80% wanted: free exactly Entrypoint's size.
	// Entrypoint (never used) goes before Layered (used earlier).
	sizes := n.imagesByID()
	need := sizes[ids[images.Entrypoint]]
	usage.set(FsStats{CapacityBytes: 20 * need, AvailableBytes: 3 * need}, nil)
	if err := c.CollectImages(t.Context()); err != nil {
		t.Fatal(err)
	}
	expectImages(t, n, ids, images.Pause, images.Busybox, images.Httpd, images.Layered, images.NonRoot)
	select {
	case ev := <-recorder.Events:
		t.Errorf("unexpected event %q", ev)
	default:
	}

	// Far more to free than unused images hold: Layered goes, the rest
	// stays, and the node gets a FreeDiskSpaceFailed event.
	usage.set(FsStats{CapacityBytes: 1 << 40, AvailableBytes: 1 << 30}, nil)
	err = c.CollectImages(t.Context())
	if err == nil || !strings.Contains(err.Error(), "Failed to free sufficient space") {
		t.Errorf("pass with too little to free: %v", err)
	}
	expectImages(t, n, ids, images.Pause, images.Busybox, images.Httpd, images.NonRoot)
	select {
	case ev := <-recorder.Events:
		if !strings.HasPrefix(ev, "Warning FreeDiskSpaceFailed Insufficient free disk space") {
			t.Errorf("event %q, want a FreeDiskSpaceFailed warning", ev)
		}
	default:
		t.Error("no FreeDiskSpaceFailed event")
	}
}

// TestImageMountedAsVolumeIsInUse mounts an image as a volume (berth
// runtime; containerd 1.6 has no image volumes): the collector counts it in
// use, as a container's own image, and removes only the unused one.
func TestImageMountedAsVolumeIsInUse(t *testing.T) {
	n := &node{t: t, client: runtimes[0].start(t)}
	ref := cri.Image
	clk := testingclock.NewFakeClock(time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC))
	usage := &fixedUsage{}
	pods := &podSource{}
	pods.set(true, "uid-live")
	policy := DefaultPolicy
	policy.PinnedImages = []string{ref(images.Pause)}
	c, err := New(Config{NodeName: "node-a", Runtime: n.rt(), Images: n.is(), Pods: pods, Usage: usage,
		Recorder: record.NewFakeRecorder(10), Clock: clk, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	sb := n.runSandbox("uid-live", 0)
	mounted := n.pull(ref(images.Entrypoint))
	n.container(sb, containerSpec{name: "web", image: ref(images.Busybox), cmd: []string{"sleep", "3600"}, start: true,
		mounts: []*runtimeapi.Mount{{ContainerPath: "/data", Readonly: true, Image: &runtimeapi.ImageSpec{Image: mounted}}}})
	n.pull(ref(images.NonRoot))
	ids := map[string]string{}
	for _, name := range []string{images.Pause, images.Busybox, images.Entrypoint, images.NonRoot} {
		ids[name] = n.imageID(ref(name))
	}
	usage.set(FsStats{CapacityBytes: 100 << 30, AvailableBytes: 50 << 30}, nil)
	if err := c.CollectImages(t.Context()); err != nil { // first seen now
		t.Fatal(err)
	}
	clk.Step(3 * time.Minute) // past MinImageAge
	usage.set(FsStats{CapacityBytes: 1 << 40, AvailableBytes: 1 << 30}, nil)
	// The runtime would refuse to remove the mounted image; the collector
	// must not try, so only the shortfall is reported.
	err = c.CollectImages(t.Context())
	if err == nil || !strings.Contains(err.Error(), "Failed to free sufficient space") || strings.Contains(err.Error(), "remove image") {
		t.Errorf("pass that cannot free enough: %v, want only the shortfall", err)
	}
	expectImages(t, n, ids, images.Pause, images.Busybox, images.Entrypoint)
}

// expectImages checks that the runtime holds exactly the named images
// (besides none other than those in ids).
func expectImages(t *testing.T, n *node, ids map[string]string, want ...string) {
	t.Helper()
	have := n.imagesByID()
	wantIDs := map[string]bool{}
	for _, name := range want {
		wantIDs[ids[name]] = true
	}
	for name, id := range ids {
		_, present := have[id]
		if present != wantIDs[id] {
			t.Errorf("image %s present = %v, want %v", name, present, wantIDs[id])
		}
	}
	if len(have) != len(wantIDs) {
		t.Errorf("runtime holds %d images, want %d", len(have), len(wantIDs))
	}
}

// TestImageGCFailureEventOnlyWhenRepeated runs the collector's loop on a
// fake clock with an unreadable image filesystem: the first failure is
// only logged, the second in a row is reported as ImageGCFailed, as the
// kubelet does.
func TestImageGCFailureEventOnlyWhenRepeated(t *testing.T) {
	onEachRuntime(t, testImageGCFailureEventOnlyWhenRepeated)
}

func testImageGCFailureEventOnlyWhenRepeated(t *testing.T, n *node) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC))
	usage := &fixedUsage{}
	usage.set(FsStats{}, errors.New("statfs: first failure"))
	recorder := record.NewFakeRecorder(10)
	pods := &podSource{}
	pods.set(true)
	c, err := New(Config{NodeName: "node-a", Runtime: n.rt(), Images: n.is(), Pods: pods, Usage: usage,
		Recorder: recorder, Clock: clk, Policy: DefaultPolicy})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	wait.Until(t, time.Minute, "the loop's tickers", func() bool { return clk.HasWaiters() })
	clk.Step(DefaultPolicy.ImagePeriod)
	wait.Until(t, time.Minute, "the first image pass", func() bool { return usage.readCount() == 1 })
	// Each pass fails differently, so an event tells which pass made it.
	usage.set(FsStats{}, errors.New("statfs: second failure"))
	clk.Step(DefaultPolicy.ImagePeriod)
	wait.Until(t, time.Minute, "the second image pass", func() bool { return usage.readCount() == 2 })
	select {
	case ev := <-recorder.Events:
		if ev != "Warning ImageGCFailed image filesystem usage: statfs: second failure" {
			t.Errorf("event %q, want ImageGCFailed for the second failure only", ev)
		}
	case <-time.After(time.Minute):
		t.Fatal("no ImageGCFailed event after two failures in a row")
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
