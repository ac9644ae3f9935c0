package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

func testFacts() Facts {
	return Facts{
		CPUs: 4, MemoryBytes: 8 << 30, MemoryAvailable: 6 << 30,
		DiskBytes: 100 << 30, DiskAvailable: 50 << 30, PIDMax: 4194304, PIDsInUse: 300,
		KernelVersion: "6.1.0-test", OSImage: "Debian GNU/Linux 12 (bookworm)",
		Architecture: "amd64", OperatingSystem: "linux", MachineID: "m1", BootID: "b1",
		Hostname: "host-a", InternalIP: "192.0.2.10",
	}
}

// observer serves a mutable Observation to the Registrar.
type observer struct {
	mu  sync.Mutex
	obs Observation
}

func (o *observer) get(context.Context) (Observation, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.obs, nil
}

func (o *observer) set(f func(*Observation)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(&o.obs)
}

func newRegistrar(t *testing.T) (*Registrar, *fake.Clientset, *testingclock.FakeClock, *observer) {
	client := fake.NewClientset()
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	obs := &observer{obs: Observation{
		Facts:      testFacts(),
		Reserved:   Reserved{CPU: resource.MustParse("500m"), Memory: resource.MustParse("1Gi"), Storage: resource.MustParse("10Gi")},
		Thresholds: DefaultThresholds, RuntimeName: "containerd", RuntimeVersion: "1.6.20", AgentVersion: "v0.1.0-test",
	}}
	r := &Registrar{Client: client, Name: "node-a", Clock: clk, Observe: obs.get, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return r, client, clk, obs
}

func conditionOf(n *corev1.Node, t corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func TestRegisterReportsCapacityInfoAndConditions(t *testing.T) {
	r, client, _, _ := newRegistrar(t)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	// One request, as the kubelet registers: the Node never exists without
	// the capacity that pods created bound to it are checked against.
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" {
			t.Errorf("registration also sent %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
		}
	}
	n, err := client.CoreV1().Nodes().Get(t.Context(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantQty := func(list corev1.ResourceList, name corev1.ResourceName, want string) {
		t.Helper()
		got := list[name]
		if got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s = %s, want %s", name, got.String(), want)
		}
	}
	wantQty(n.Status.Capacity, corev1.ResourceCPU, "4")
	wantQty(n.Status.Capacity, corev1.ResourceMemory, "8Gi")
	wantQty(n.Status.Capacity, corev1.ResourcePods, "110")
	wantQty(n.Status.Capacity, corev1.ResourceEphemeralStorage, "100Gi")
	wantQty(n.Status.Allocatable, corev1.ResourceCPU, "3500m")
	wantQty(n.Status.Allocatable, corev1.ResourceMemory, "7Gi")
	wantQty(n.Status.Allocatable, corev1.ResourceEphemeralStorage, "90Gi")
	wantQty(n.Status.Allocatable, corev1.ResourcePods, "110")
	info := n.Status.NodeInfo
	if info.ContainerRuntimeVersion != "containerd://1.6.20" || info.KubeletVersion != "v0.1.0-test" ||
		info.KernelVersion != "6.1.0-test" || info.Architecture != "amd64" || info.OSImage == "" {
		t.Errorf("nodeInfo = %+v", info)
	}
	if len(n.Status.Addresses) != 2 || n.Status.Addresses[0].Address != "192.0.2.10" {
		t.Errorf("addresses = %+v", n.Status.Addresses)
	}
	if n.Labels[corev1.LabelHostname] != "node-a" {
		t.Errorf("labels = %v", n.Labels)
	}
	for typ, want := range map[corev1.NodeConditionType]corev1.ConditionStatus{
		corev1.NodeReady: corev1.ConditionTrue, corev1.NodeMemoryPressure: corev1.ConditionFalse,
		corev1.NodeDiskPressure: corev1.ConditionFalse, corev1.NodePIDPressure: corev1.ConditionFalse,
	} {
		if c := conditionOf(n, typ); c.Status != want || c.LastHeartbeatTime.IsZero() {
			t.Errorf("condition %s = %+v, want %s with a heartbeat time", typ, c, want)
		}
	}
}

// countStatusReports counts the node's status writes: its registration
// (a create carrying the status) and every status update since.
func countStatusReports(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		registered := a.GetVerb() == "create" && a.GetResource().Resource == "nodes"
		if registered || a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestStatusReportedOnChangeAndEveryFiveMinutes(t *testing.T) {
	r, client, clk, obs := newRegistrar(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	waitUpdates := func(want int) {
		t.Helper()
		err := wait.PollTrue(t.Context(), 30*time.Second, fmt.Sprintf("%d status updates", want), func(context.Context) (bool, error) {
			return countStatusReports(client) >= want, nil
		})
		if err != nil {
			t.Fatalf("%v (%d so far)", err, countStatusReports(client))
		}
	}
	waitTicker := func() {
		t.Helper()
		if err := wait.PollTrue(t.Context(), 30*time.Second, "the registrar to wait on its ticker", func(context.Context) (bool, error) {
			return clk.HasWaiters(), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitUpdates(1) // registration
	waitTicker()

	// Unchanged and within five minutes: ticks report nothing.
	for range 3 {
		clk.Step(CheckInterval)
	}
	// A change is reported at the next tick.
	obs.set(func(o *Observation) { o.Facts.MemoryAvailable = 10 << 20 })
	clk.Step(CheckInterval)
	waitUpdates(2)
	if got := countStatusReports(client); got != 2 {
		t.Fatalf("status updates = %d after three quiet ticks and one change, want 2", got)
	}
	n, _ := client.CoreV1().Nodes().Get(t.Context(), "node-a", metav1.GetOptions{})
	if c := conditionOf(n, corev1.NodeMemoryPressure); c.Status != corev1.ConditionTrue || c.Reason != "KubeletHasInsufficientMemory" {
		t.Fatalf("MemoryPressure = %+v, want True", c)
	}
	firstTransition := conditionOf(n, corev1.NodeReady).LastTransitionTime

	// Nothing changes for five minutes: the status is reported again anyway.
	clk.Step(ReportInterval)
	waitUpdates(3)
	n, _ = client.CoreV1().Nodes().Get(t.Context(), "node-a", metav1.GetOptions{})
	ready := conditionOf(n, corev1.NodeReady)
	if !ready.LastTransitionTime.Equal(&firstTransition) || !ready.LastHeartbeatTime.After(firstTransition.Time) {
		t.Fatalf("Ready = %+v: want the transition time kept and the heartbeat moved", ready)
	}
}

func TestRuntimeNotReadyMakesNodeNotReady(t *testing.T) {
	r, client, _, obs := newRegistrar(t)
	obs.set(func(o *Observation) { o.RuntimeErr = errors.New("NetworkReady=false") })
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	n, _ := client.CoreV1().Nodes().Get(t.Context(), "node-a", metav1.GetOptions{})
	if c := conditionOf(n, corev1.NodeReady); c.Status != corev1.ConditionFalse || c.Reason != "KubeletNotReady" {
		t.Fatalf("Ready = %+v, want False/KubeletNotReady", c)
	}
}

func TestStatusUpdateRetriesOnConflict(t *testing.T) {
	r, client, _, _ := newRegistrar(t)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	conflicts := 1
	client.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtimeObject, error) {
		if a.GetSubresource() == "status" && conflicts > 0 {
			conflicts--
			return true, nil, conflictErr()
		}
		return false, nil, nil
	})
	r.lastReported = nil // force a report
	if err := r.Sync(t.Context()); err != nil {
		t.Fatalf("sync after one conflict: %v", err)
	}
	if conflicts != 0 {
		t.Fatal("the conflict reactor was never hit")
	}
}

func TestLeaseCreatedOwnedByNodeAndRenewed(t *testing.T) {
	r, client, clk, _ := newRegistrar(t)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// A short real renew interval only paces the loop; what is checked is
	// that renewals carry the fake clock's time.
	go NewLeaseController(client, "node-a", clk, 5*time.Millisecond).Run(ctx)
	renewedAt := func(want time.Time) {
		t.Helper()
		err := wait.PollTrue(t.Context(), 30*time.Second, fmt.Sprintf("the lease to be renewed at %v", want), func(ctx context.Context) (bool, error) {
			l, err := client.CoordinationV1().Leases(LeaseNamespace).Get(ctx, "node-a", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Equal(want), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	renewedAt(clk.Now())
	l, _ := client.CoordinationV1().Leases(LeaseNamespace).Get(t.Context(), "node-a", metav1.GetOptions{})
	if *l.Spec.HolderIdentity != "node-a" || *l.Spec.LeaseDurationSeconds != 40 ||
		len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" {
		t.Fatalf("lease = %+v", l)
	}
	clk.Step(LeaseRenewInterval)
	renewedAt(clk.Now())
}

// Extended resources advertised in the node's capacity by someone else are
// kept, allocatable in full, when the agent reports its status, as the
// kubelet keeps them; what the agent measures it reports itself.
func TestStatusKeepsAdvertisedExtendedResources(t *testing.T) {
	r, client, clk, _ := newRegistrar(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := wait.PollTrue(t.Context(), 30*time.Second, "the node registered", func(context.Context) (bool, error) {
		return countStatusReports(client) >= 1 && clk.HasWaiters(), nil
	}); err != nil {
		t.Fatal(err)
	}
	const dongle = corev1.ResourceName("example.com/dongle")
	n, err := client.CoreV1().Nodes().Get(t.Context(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Capacity[dongle] = resource.MustParse("5")
	n.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("64") // not the agent's to keep
	if _, err := client.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(ReportInterval)
	if err := wait.PollTrue(t.Context(), 30*time.Second, "the status reported again", func(context.Context) (bool, error) {
		return countStatusReports(client) >= 3, nil
	}); err != nil {
		t.Fatal(err)
	}
	n, err = client.CoreV1().Nodes().Get(t.Context(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capacity, allocatable := n.Status.Capacity[dongle], n.Status.Allocatable[dongle]
	if capacity.Value() != 5 || allocatable.Value() != 5 {
		t.Errorf("example.com/dongle capacity %s allocatable %s, want 5 and 5", &capacity, &allocatable)
	}
	if cpu := n.Status.Capacity[corev1.ResourceCPU]; cpu.Value() != 4 {
		t.Errorf("cpu capacity %s, want the measured 4", &cpu)
	}
}
