package nodeipam

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/berth/berth/internal/testkit/wait"
)

// start runs a controller for cfg over client until the test ends.
func start(t *testing.T, client kubernetes.Interface, clusterCIDR string, mask int) {
	t.Helper()
	c, err := New(Config{Client: client, ClusterCIDR: clusterCIDR, NodeMaskSize: mask})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func node(name, podCIDR string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if podCIDR != "" {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDR, []string{podCIDR}
	}
	return n
}

// waitPodCIDR waits until the node has a podCIDR and returns it.
func waitPodCIDR(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	var got *v1.Node
	wait.UntilCtx(t, 30*time.Second, "node "+name+" to get a podCIDR", func(ctx context.Context) error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got = n
		if n.Spec.PodCIDR == "" {
			return fmt.Errorf("last %+v", n)
		}
		return nil
	})
	if len(got.Spec.PodCIDRs) != 1 || got.Spec.PodCIDRs[0] != got.Spec.PodCIDR {
		t.Fatalf("node %s: podCIDRs %v do not start with podCIDR %s", name, got.Spec.PodCIDRs, got.Spec.PodCIDR)
	}
	return got.Spec.PodCIDR
}

func TestAssignsFreeCIDRsAroundExistingOnes(t *testing.T) {
	client := fake.NewClientset(node("old-a", "10.88.0.0/24"), node("old-b", "10.88.2.0/24"), node("manual", "192.168.5.0/24"))
	start(t, client, "10.88.0.0/16", 24)
	ctx := context.Background()
	for _, name := range []string{"new-1", "new-2"} {
		if _, err := client.CoreV1().Nodes().Create(ctx, node(name, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{waitPodCIDR(t, client, "new-1"): true, waitPodCIDR(t, client, "new-2"): true}
	if !got["10.88.1.0/24"] || !got["10.88.3.0/24"] {
		t.Fatalf("new nodes got %v; want 10.88.1.0/24 and 10.88.3.0/24 (the free ones after recovery)", got)
	}
	for name, want := range map[string]string{"old-a": "10.88.0.0/24", "old-b": "10.88.2.0/24", "manual": "192.168.5.0/24"} {
		if n, _ := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); n.Spec.PodCIDR != want {
			t.Errorf("existing node %s changed to %s", name, n.Spec.PodCIDR)
		}
	}
}

func TestFullRangeGivesEventAndDeletedNodeFreesItsCIDR(t *testing.T) {
	client := fake.NewClientset()
	start(t, client, "10.88.0.0/23", 24) // room for two nodes
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if _, err := client.CoreV1().Nodes().Create(ctx, node(name, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPodCIDR(t, client, name)
	}
	aCIDR := waitPodCIDR(t, client, "a")
	if _, err := client.CoreV1().Nodes().Create(ctx, node("c", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilCtx(t, 30*time.Second, "a CIDRNotAvailable event for node c", func(ctx context.Context) error {
		evs, err := client.EventsV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "CIDRNotAvailable" && e.Regarding.Name == "c" && e.Type == v1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("%d events, none of them", len(evs.Items))
	})
	if n, _ := client.CoreV1().Nodes().Get(ctx, "c", metav1.GetOptions{}); n.Spec.PodCIDR != "" {
		t.Fatalf("node c got %s from a full range", n.Spec.PodCIDR)
	}

	if err := client.CoreV1().Nodes().Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitPodCIDR(t, client, "c"); got != aCIDR {
		t.Fatalf("node c got %s; want the deleted node's %s", got, aCIDR)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cidr string
		mask int
	}{{"", 24}, {"10.88.0.0", 24}, {"10.88.0.1/16", 24}, {"10.88.0.0/16", 12}, {"10.88.0.0/16", 0}} {
		if _, err := New(Config{Client: fake.NewClientset(), ClusterCIDR: tc.cidr, NodeMaskSize: tc.mask}); err == nil {
			t.Errorf("New(%q, /%d) accepted", tc.cidr, tc.mask)
		}
	}
}
