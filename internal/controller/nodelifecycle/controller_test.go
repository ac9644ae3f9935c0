package nodelifecycle

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

type harness struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	ctrl   *Controller
}

func newHarness(t *testing.T, objects ...any) *harness {
	t.Helper()
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &harness{t: t, ctx: ctx, client: client, clock: clk}
	h.ctrl = New(Config{Client: client, Clock: clk, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	h.ctrl.factory.Start(ctx.Done())
	h.ctrl.factory.WaitForCacheSync(ctx.Done())
	return h
}

func (h *harness) createNode(name string) {
	h.t.Helper()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{
		Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(h.clock.Now()),
	}}}}
	if _, err := h.client.CoreV1().Nodes().Create(h.ctx, node, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.renew(name)
}

func (h *harness) renew(name string) {
	h.t.Helper()
	now := metav1.NewMicroTime(h.clock.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &now}}
	if _, err := h.client.CoordinationV1().Leases(leaseNamespace).Update(h.ctx, lease, metav1.UpdateOptions{}); err != nil {
		if _, err := h.client.CoordinationV1().Leases(leaseNamespace).Create(h.ctx, lease, metav1.CreateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) createPod(name, node string, tolerationSeconds *int64) {
	h.t.Helper()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "i"}}}}
	if tolerationSeconds != nil {
		pod.Spec.Tolerations = []v1.Toleration{{Key: TaintUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: tolerationSeconds}}
	}
	if _, err := h.client.CoreV1().Pods("default").Create(h.ctx, pod, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// sync waits for the informers to see the API's current state, then runs one pass.
func (h *harness) sync() {
	h.t.Helper()
	wait.Until(h.t, 30*time.Second, "the informers to catch up with the API", func() bool {
		nodes, _ := h.client.CoreV1().Nodes().List(h.ctx, metav1.ListOptions{})
		pods, _ := h.client.CoreV1().Pods("").List(h.ctx, metav1.ListOptions{})
		leases, _ := h.client.CoordinationV1().Leases(leaseNamespace).List(h.ctx, metav1.ListOptions{})
		cachedNodes, _ := h.ctrl.nodes.List(everything)
		cachedPods := h.ctrl.listPods()
		cachedLeases, _ := h.ctrl.leases.List(everything)
		return sameObjects(nodes.Items, cachedNodes, func(n *v1.Node) *v1.Node { return n }) &&
			sameObjects(pods.Items, cachedPods, newLifecyclePod) &&
			sameObjects(leases.Items, cachedLeases, func(l *coordinationv1.Lease) *coordinationv1.Lease { return l })
	})
	if err := h.ctrl.Sync(h.ctx); err != nil {
		h.t.Fatal(err)
	}
}

// sameObjects reports whether the cache holds exactly the live objects. The
// fake clientset does not bump resourceVersions, so objects are compared whole.
func sameObjects[L any, C metav1.Object](live []L, cached []C, ptr func(*L) C) bool {
	if len(live) != len(cached) {
		return false
	}
	byName := map[string]C{}
	for _, c := range cached {
		byName[c.GetName()] = c
	}
	for i := range live {
		l := ptr(&live[i])
		l.SetManagedFields(nil) // the controller's informers drop them (informeropts)
		if !apiequality.Semantic.DeepEqual(l, byName[l.GetName()]) {
			return false
		}
	}
	return true
}

func (h *harness) node(name string) *v1.Node {
	h.t.Helper()
	n, err := h.client.CoreV1().Nodes().Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

func (h *harness) podExists(name string) bool {
	_, err := h.client.CoreV1().Pods("default").Get(h.ctx, name, metav1.GetOptions{})
	return err == nil
}

func hasTaint(n *v1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == v1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

func TestSilentNodeIsMarkedTaintedAndEvicted(t *testing.T) {
	h := newHarness(t)
	h.createNode("quiet")
	h.createNode("chatty")
	fiveMinutes, tenMinutes := int64(300), int64(600)
	h.createPod("default-toleration", "quiet", &fiveMinutes)
	h.createPod("patient", "quiet", &tenMinutes)
	h.createPod("intolerant", "quiet", nil)
	h.createPod("elsewhere", "chatty", nil)
	h.sync()

	// 39 s of silence is within the grace period.
	h.clock.Step(39 * time.Second)
	h.renew("chatty")
	h.sync()
	if readyStatus(h.node("quiet")) != v1.ConditionTrue {
		t.Fatal("node marked unhealthy within its grace period")
	}

	// Past 40 s: Unknown, tainted unreachable:NoExecute; the intolerant pod goes at once.
	h.clock.Step(2 * time.Second)
	h.renew("chatty")
	h.sync()
	quiet := h.node("quiet")
	if readyStatus(quiet) != v1.ConditionUnknown || !hasTaint(quiet, TaintUnreachable) {
		t.Fatalf("silent node: ready=%s taints=%v", readyStatus(quiet), quiet.Spec.Taints)
	}
	if hasTaint(h.node("chatty"), TaintUnreachable) || readyStatus(h.node("chatty")) != v1.ConditionTrue {
		t.Fatal("a node renewing its lease was marked unreachable")
	}
	h.sync() // evictions see the taint on the next pass
	if h.podExists("intolerant") {
		t.Error("pod without a toleration was not evicted")
	}
	if !h.podExists("default-toleration") || !h.podExists("patient") || !h.podExists("elsewhere") {
		t.Fatal("a tolerating pod, or one on a healthy node, was evicted early")
	}

	// After 300 s the default toleration runs out; 600 s lasts longer.
	h.clock.Step(300 * time.Second)
	h.renew("chatty")
	h.sync()
	if h.podExists("default-toleration") {
		t.Error("pod still there after its tolerationSeconds")
	}
	for _, name := range []string{"patient", "elsewhere"} {
		if !h.podExists(name) {
			t.Errorf("%s was evicted", name)
		}
	}
}

func TestRecoveredNodeLosesTaint(t *testing.T) {
	h := newHarness(t)
	h.createNode("n")
	h.sync()
	h.clock.Step(time.Minute)
	h.sync()
	if !hasTaint(h.node("n"), TaintUnreachable) {
		t.Fatal("not tainted")
	}
	// The agent comes back and posts Ready.
	n := h.node("n")
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(h.clock.Now())}}
	if _, err := h.client.CoreV1().Nodes().UpdateStatus(h.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.renew("n")
	h.sync()
	if n := h.node("n"); hasTaint(n, TaintUnreachable) || hasTaint(n, TaintNotReady) {
		t.Errorf("recovered node still tainted: %v", n.Spec.Taints)
	}
}

func TestPodsOfDeletedNodesAreCollected(t *testing.T) {
	h := newHarness(t)
	h.createNode("kept")
	h.createPod("orphan", "gone", nil)
	h.createPod("fine", "kept", nil)
	h.sync()
	if h.podExists("orphan") {
		t.Error("pod bound to a node that does not exist was not collected")
	}
	if !h.podExists("fine") {
		t.Error("pod on an existing node was collected")
	}
}

func TestReconcileTaintsKeepsOthersAndTimeAdded(t *testing.T) {
	now := time.Unix(1000, 0)
	earlier := metav1.NewTime(time.Unix(10, 0))
	other := v1.Taint{Key: "dedicated", Effect: v1.TaintEffectNoSchedule}
	in := []v1.Taint{other, {Key: TaintUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &earlier}}
	out, changed := reconcileTaints(in, TaintUnreachable, now)
	if changed || len(out) != 2 || !out[1].TimeAdded.Equal(&earlier) {
		t.Errorf("unchanged state rewritten: %v %v", changed, out)
	}
	out, changed = reconcileTaints(in, TaintNotReady, now)
	if !changed || len(out) != 2 || out[0].Key != "dedicated" || out[1].Key != TaintNotReady || !out[1].TimeAdded.Time.Equal(now) {
		t.Errorf("swap to not-ready: %v %v", changed, out)
	}
	out, changed = reconcileTaints(in, "", now)
	if !changed || len(out) != 1 || out[0].Key != "dedicated" {
		t.Errorf("clear: %v %v", changed, out)
	}
}

// testWriter routes the controller's log into the test's output.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
