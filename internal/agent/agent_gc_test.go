package agent

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/agent/gc"
	"github.com/berth/berth/internal/agent/podcgroup/podcgrouptest"
	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestAgentCollectsDeletedPodsLogDirectory runs the whole agent against
// containerd with a fast collection period: once a pod is deleted and its
// worker has removed its sandbox, the collector (fed by the agent's own pod
// cache) removes the pod's log directory, which nothing else removes; and
// the pod's cgroup, which the runtime never removes, is gone from every
// hierarchy.
func TestAgentCollectsDeletedPodsLogDirectory(t *testing.T) {
	ctd := cri.Start(t)
	client := fake.NewClientset()
	cfg := Config{NodeName: "node-a", DataDir: t.TempDir(), RuntimeEndpoint: ctd.Endpoint, GC: gc.DefaultPolicy}
	cfg.GC.ContainerPeriod = 100 * time.Millisecond
	a := New(cfg, client, ctd.Client, ctd.Version, clock.RealClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	m, err := newMetrics()
	if err != nil {
		t.Fatal(err)
	}
	a.metrics = m // before Run, so reading it below races with nothing
	runAgent(t, a)

	createSleepPod(t, client, "short")
	logDir := cfg.podLogDir() + "/default_short_uid-short"
	wait.UntilTrue(t, 2*time.Minute, "the pod running", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "short", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	if _, err := os.Stat(logDir); err != nil {
		t.Fatalf("the running pod's log directory: %v", err)
	}
	if dirs := podcgrouptest.HostPodDirs(t, "uid-short"); len(dirs) == 0 {
		t.Fatal("the running pod has no cgroup under its cgroup parent")
	}
	// Several collections pass while the pod runs: its directory stays.
	before := gcRemoved(t, m.registry, "log-directory")
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(logDir); err != nil {
		t.Fatalf("the running pod's log directory was collected: %v", err)
	}

	if err := client.CoreV1().Pods("default").Delete(t.Context(), "short", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, 2*time.Minute, "the deleted pod's log directory removed", func() bool {
		_, err := os.Stat(logDir)
		return os.IsNotExist(err)
	})
	if got := gcRemoved(t, m.registry, "log-directory"); got != before+1 {
		t.Errorf("gc removed_total{kind=log-directory} = %v, want %v", got, before+1)
	}
	// The worker removes it after the sandbox, so maybe just after the
	// collector removed the log directory.
	wait.Until(t, 2*time.Minute, "the deleted pod's cgroup removed", func() bool {
		return len(podcgrouptest.HostPodDirs(t, "uid-short")) == 0
	})
}

func gcRemoved(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "berth_agent_gc_removed_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
