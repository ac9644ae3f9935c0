package agent

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/berth/berth/internal/agent/node"
	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

// TestAgentAgainstContainerd runs the whole agent (registration, lease,
// pods) against containerd's CRI socket, with the API played by client-go's
// fake clientset.
func TestAgentAgainstContainerd(t *testing.T) {
	ctd := cri.Start(t)
	client := fake.NewClientset()
	cfg := Config{NodeName: "node-a", DataDir: t.TempDir(), RuntimeEndpoint: ctd.Endpoint}
	a := New(cfg, client, ctd.Client, ctd.Version, clock.RealClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	runAgent(t, a)

	var n *corev1.Node
	// The agent creates its Node first and reports its status in a second
	// write, so wait for the status rather than for the object.
	wait.UntilTrue(t, 90*time.Second, "the node to register and report its status", func(ctx context.Context) (bool, error) {
		var err error
		n, err = client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		return err == nil && len(n.Status.Addresses) > 0 && len(n.Status.Conditions) > 0, nil
	})
	if rv := n.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rv, "containerd://1.6") {
		t.Errorf("container runtime version = %q", rv)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			t.Errorf("node Ready = %+v", c)
		}
	}
	wait.UntilTrue(t, 90*time.Second, "the node to hold its lease", func(ctx context.Context) (bool, error) {
		l, err := client.CoordinationV1().Leases(node.LeaseNamespace).Get(ctx, "node-a", metav1.GetOptions{})
		return err == nil && *l.Spec.HolderIdentity == "node-a", nil
	})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", UID: "uid-hello"},
		Spec: corev1.PodSpec{NodeName: "node-a", RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{
			Name: "web", Image: cri.Image(images.Httpd), TerminationMessagePath: corev1.TerminationMessagePathDefault,
		}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilTrue(t, 90*time.Second, "the pod to run", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].Ready && p.Status.HostIP == n.Status.Addresses[0].Address, nil
	})
}
