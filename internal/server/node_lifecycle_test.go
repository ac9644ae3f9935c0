package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/controller/nodelifecycle"
	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/nodewait"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestNodeLifecycleIsUpstreams follows a node through kube-controller-
// manager's node lifecycle as berth server runs it: a new Node carries the
// not-ready NoSchedule taint (TaintNodesByCondition), lifted once the node
// reports Ready; when its heartbeats stop it becomes Unknown, is tainted
// unreachable NoExecute and its pods are marked not ready, and a pod
// tolerating that for one second is evicted while one tolerating it longer
// stays (an eviction is a graceful deletion: it stays terminating with no agent
// to confirm it); a pod whose node is deleted is collected.
func TestNodeLifecycleIsUpstreams(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	periods := nodelifecycle.Periods{Monitor: 200 * time.Millisecond, StartupGrace: 3 * time.Second, MonitorGrace: 3 * time.Second}
	s := cluster.InProcess(t, "", func(ctx context.Context, dataDir string, port int) error {
		return server.Run(ctx, server.Config{DataDir: dataDir, BindAddress: "127.0.0.1", Port: port, DisableAgent: true,
			NodeLifecyclePeriods: periods, Logger: log})
	})
	ctx := t.Context()
	nodes := s.Admin.CoreV1().Nodes()
	created, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node: %v", err)
	}
	if !hasTaint(created, "node.kubernetes.io/not-ready", corev1.TaintEffectNoSchedule) {
		t.Fatalf("a new node's taints are %v, want node.kubernetes.io/not-ready:NoSchedule", created.Spec.Taints)
	}
	heartbeat(t, s.Admin, "n1")
	// n1 stays live until its pods are Ready: the controller marks pods not
	// ready once, as the node's Ready condition leaves True, so a set-up
	// slower than the grace period would leave nothing to mark.
	n1Live, silenceN1 := context.WithCancel(ctx)
	defer silenceN1()
	go keepRenewing(n1Live, s.Admin, "n1", 500*time.Millisecond)
	if err := nodewait.Untainted(t.Context(), s.Admin, time.Minute, "n1"); err != nil {
		t.Fatal(err)
	}

	// Upstream stops tainting and evicting when every node is silent (it
	// takes that for a control-plane disruption): a second node stays live.
	readyNode(t, s.Admin, "steady")
	go keepRenewing(ctx, s.Admin, "steady", 500*time.Millisecond)

	podNamespace(t, s.Admin, "lifecycle")
	pods := s.Admin.CoreV1().Pods("lifecycle")
	for name, seconds := range map[string]int64{"brief": 1, "patient": 3600} {
		pod := boundPod(name, "n1")
		pod.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(seconds)}}
		created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
		// Running and Ready, as its agent would report it.
		created.Status.Phase = corev1.PodRunning
		created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("report pod %s Ready: %v", name, err)
		}
	}
	// A pod whose node is then deleted.
	readyNode(t, s.Admin, "gone")
	if _, err := pods.Create(ctx, boundPod("orphan", "gone"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod on node gone: %v", err)
	}
	if err := nodes.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete node gone: %v", err)
	}

	// No heartbeat from here on.
	silenceN1()
	wait.UntilNil(t, time.Minute, "the silent node Unknown and tainted unreachable:NoExecute", func() error {
		n, err := nodes.Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if readyStatus(n) != corev1.ConditionUnknown || !hasTaint(n, "node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute) {
			return fmt.Errorf("Ready %s, taints %v", readyStatus(n), n.Spec.Taints)
		}
		return nil
	})
	// Evicted is deleted gracefully: with no agent on the node to confirm,
	// it stays terminating, as on kube-apiserver.
	wait.UntilNil(t, time.Minute, "the pod tolerating unreachable for 1 s evicted", func() error {
		p, err := pods.Get(ctx, "brief", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil) {
			return nil
		}
		return fmt.Errorf("pod brief not being deleted (%v)", err)
	})
	patient, err := pods.Get(ctx, "patient", metav1.GetOptions{})
	if err != nil || patient.DeletionTimestamp != nil {
		t.Fatalf("the pod tolerating unreachable for an hour: %v, deletion %v", err, patient.GetDeletionTimestamp())
	}
	wait.UntilNil(t, time.Minute, "the pod of the silent node marked not ready", func() error {
		p, err := pods.Get(ctx, "patient", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", p.Status.Conditions)
	})
	// Upstream's pod GC waits 40 s (its quarantine) before it trusts that a
	// node is gone, and looks every 20 s.
	wait.UntilNil(t, 2*time.Minute, "the pod of the deleted node collected", func() error {
		_, err := pods.Get(ctx, "orphan", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod orphan still there (%v)", err)
	})
}

// readyNode creates a node that reports Ready once, as a registering agent
// does, and waits until it can take pods.
func readyNode(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	heartbeat(t, cs, name)
	if err := nodewait.Untainted(t.Context(), cs, time.Minute, name); err != nil {
		t.Fatal(err)
	}
}

// heartbeat reports the node Ready now and renews its Lease, once.
func heartbeat(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	ctx := t.Context()
	now := metav1.Now()
	// The node lifecycle controller writes the node too.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now}}
		n.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110"),
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("4Gi")}
		n.Status.Allocatable = n.Status.Capacity
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("report node %s Ready: %v", name, err)
	}
	renew := metav1.NewMicroTime(now.Time)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &renew}}
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the node's lease: %v", err)
	}
}

// keepRenewing renews the node's Lease every period until ctx ends, as an
// agent's heartbeat does.
func keepRenewing(ctx context.Context, cs kubernetes.Interface, name string, period time.Duration) {
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C: //wait:intended a Lease renewal every period, as an agent heartbeats
		}
		if l, err := leases.Get(ctx, name, metav1.GetOptions{}); err == nil {
			l.Spec.RenewTime = ptr.To(metav1.NowMicro())
			_, _ = leases.Update(ctx, l, metav1.UpdateOptions{}) // the next tick retries
		}
	}
}

func boundPod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
