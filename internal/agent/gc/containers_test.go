package gc

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
)

// TestCollectContainersOnBothRuntimes builds, in a real runtime, dead
// and live containers and sandboxes of a pod that exists and of pods that
// are gone, runs one pass, and checks exactly what was removed and kept.
func TestCollectContainersOnBothRuntimes(t *testing.T) {
	onEachRuntime(t, testCollectContainersOnBothRuntimes)
}

func testCollectContainersOnBothRuntimes(t *testing.T, n *node) {
	busybox := cri.Image(images.Busybox)
	fail := []string{"sh", "-c", "exit 1"}
	sleep := []string{"sleep", "3600"}

	// The live pod: an old stopped sandbox, then the current one holding
	// three dead attempts of "app" and the running fourth, one dead
	// instance of "side", an "init" created but not started yet, and an
	// exited container without the agent's labels.
	liveOld := n.runSandbox("uid-live", 0)
	n.stopSandbox(liveOld)
	live := n.runSandbox("uid-live", 1)
	app0 := n.container(live, containerSpec{name: "app", attempt: 0, image: busybox, cmd: fail, start: true, exits: true})
	app1 := n.container(live, containerSpec{name: "app", attempt: 1, image: busybox, cmd: fail, start: true, exits: true})
	app2 := n.container(live, containerSpec{name: "app", attempt: 2, image: busybox, cmd: fail, start: true, exits: true})
	app3 := n.container(live, containerSpec{name: "app", attempt: 3, image: busybox, cmd: sleep, start: true})
	side0 := n.container(live, containerSpec{name: "side", attempt: 0, image: busybox, cmd: fail, start: true, exits: true})
	init0 := n.container(live, containerSpec{name: "init", attempt: 0, image: busybox, cmd: fail})
	stranger := n.container(live, containerSpec{name: "stranger", image: busybox, cmd: fail, start: true, exits: true, labels: map[string]string{"owner": "someone-else"}})

	// A deleted pod whose sandbox is stopped: everything of it goes.
	gone := n.runSandbox("uid-gone", 0)
	gone0 := n.container(gone, containerSpec{name: "app", attempt: 0, image: busybox, cmd: fail, start: true, exits: true})
	gone1 := n.container(gone, containerSpec{name: "app", attempt: 1, image: busybox, cmd: fail, start: true, exits: true})
	n.stopSandbox(gone)

	// A deleted pod still running: its worker stops it, not the collector.
	running := n.runSandbox("uid-gone-running", 0)
	runningApp := n.container(running, containerSpec{name: "app", image: busybox, cmd: sleep, start: true})

	pods := &podSource{}
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Log directories as the pod workers name them, of the live pod, of
	// the two deleted ones, of a pod long gone from the runtime too, and
	// things that are not a pod's log directory.
	logDir := t.TempDir()
	logDirs := []string{"default_pod-uid-live_uid-live", "default_pod-uid-gone_uid-gone",
		"default_pod-uid-gone-running_uid-gone-running", "default_old_uid-ancient", "not-a-pod-dir"}
	for _, d := range logDirs {
		if err := os.MkdirAll(filepath.Join(logDir, d, "app"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(logDir, "default_file_uid-file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{NodeName: "node-a", Runtime: n.rt(), Images: n.is(), Pods: pods, PodLogDir: logDir, Policy: DefaultPolicy, Metrics: metrics,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	allContainers := []string{app0, app1, app2, app3, side0, init0, stranger, gone0, gone1, runningApp}
	allSandboxes := []string{liveOld.id, live.id, gone.id, running.id}

	// Before the informer has listed, every pod would look deleted: the
	// pass must do nothing.
	pods.set(false)
	if err := c.CollectContainers(t.Context()); err != nil {
		t.Fatal(err)
	}
	expectSet(t, "containers before the pods are known", n.containerIDs(), allContainers)
	expectSet(t, "sandboxes before the pods are known", n.sandboxIDs(), allSandboxes)
	expectSet(t, "log directories before the pods are known", dirEntries(t, logDir), append(logDirs, "default_file_uid-file"))

	pods.set(true, "uid-live")
	if err := c.CollectContainers(t.Context()); err != nil {
		t.Fatal(err)
	}
	expectSet(t, "containers", n.containerIDs(), []string{app2, app3, side0, init0, stranger, runningApp})
	expectSet(t, "sandboxes", n.sandboxIDs(), []string{live.id, running.id})
	expectSet(t, "log directories", dirEntries(t, logDir), []string{"default_pod-uid-live_uid-live",
		"default_pod-uid-gone-running_uid-gone-running", "not-a-pod-dir", "default_file_uid-file"})
	for kind, want := range map[string]float64{"container": 4, "sandbox": 2, "log-directory": 2} {
		if got := removedCount(t, metrics, kind); got != want {
			t.Errorf("gc removed_total{kind=%s} = %v, want %v", kind, got, want)
		}
	}

	// A second pass finds nothing more to do.
	if err := c.CollectContainers(t.Context()); err != nil {
		t.Fatal(err)
	}
	expectSet(t, "containers after a second pass", n.containerIDs(), []string{app2, app3, side0, init0, stranger, runningApp})
}

// TestCollectContainersKeepsWhatThePolicySays: with three dead instances
// kept, none of the live pod's three dead attempts goes; with the limit
// off, neither.
func TestCollectContainersKeepsWhatThePolicySays(t *testing.T) {
	onEachRuntime(t, testCollectContainersKeepsWhatThePolicySays)
}

func testCollectContainersKeepsWhatThePolicySays(t *testing.T, n *node) {
	busybox := cri.Image(images.Busybox)
	fail := []string{"sh", "-c", "exit 1"}
	live := n.runSandbox("uid-live", 0)
	var ids []string
	for attempt := range uint32(3) {
		ids = append(ids, n.container(live, containerSpec{name: "app", attempt: attempt, image: busybox, cmd: fail, start: true, exits: true}))
	}
	pods := &podSource{}
	pods.set(true, "uid-live")
	for _, keep := range []int{3, -1} {
		policy := DefaultPolicy
		policy.MaxDeadPerContainer = keep
		c, err := New(Config{Runtime: n.rt(), Images: n.is(), Pods: pods, Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CollectContainers(t.Context()); err != nil {
			t.Fatal(err)
		}
		expectSet(t, "containers", n.containerIDs(), ids)
	}
	policy := DefaultPolicy
	policy.MaxDeadPerContainer = 2
	c, err := New(Config{Runtime: n.rt(), Images: n.is(), Pods: pods, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CollectContainers(t.Context()); err != nil {
		t.Fatal(err)
	}
	expectSet(t, "containers with two kept", n.containerIDs(), ids[1:])
}

func expectSet(t *testing.T, what string, got map[string]bool, want []string) {
	t.Helper()
	var have []string
	for id := range got {
		have = append(have, id)
	}
	sort.Strings(have)
	want = slices.Sorted(slices.Values(want)) // a copy: callers reuse their slice
	if len(have) != len(want) {
		t.Errorf("%s: %v, want %v", what, have, want)
		return
	}
	for i := range have {
		if have[i] != want[i] {
			t.Errorf("%s: %v, want %v", what, have, want)
			return
		}
	}
}

func dirEntries(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

func removedCount(t *testing.T, m *Metrics, kind string) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.removedTotal.WithLabelValues(kind).Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}
