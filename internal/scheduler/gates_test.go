package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A gated pod is not scheduled, says why as kube-scheduler does, and is
// bound once its gates are removed; the sweep leaves it alone meanwhile.
func TestGatedPodWaitsForItsGates(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", bindingReactor(client))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := client.CoreV1().Nodes().Create(ctx, testNode("a", "2", "4Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := testPod("gated", "100m", "64Mi", func(p *v1.Pod) {
		p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/quota"}}
	})
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Client: client})
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	get := func() *v1.Pod {
		p, err := client.CoreV1().Pods("default").Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	err := wait.PollTrue(ctx, 30*time.Second, "the SchedulingGated condition", func(context.Context) (bool, error) {
		c := podCondition(get(), v1.PodScheduled)
		return c != nil && c.Reason == reasonSchedulingGated, nil
	})
	if err != nil {
		t.Fatalf("no SchedulingGated condition: %v", err)
	}
	if c := podCondition(get(), v1.PodScheduled); c.Status != v1.ConditionFalse || c.Message != messageSchedulingGated {
		t.Errorf("condition %+v", c)
	}
	if p := get(); p.Spec.NodeName != "" {
		t.Fatalf("a gated pod was bound to %s", p.Spec.NodeName)
	}
	if n := s.sweep(); n != 0 {
		t.Errorf("the sweep re-queued %d pods: a gated pod is not lost, it waits", n)
	}
	released := get()
	released.Spec.SchedulingGates = nil
	if _, err := client.CoreV1().Pods("default").Update(ctx, released, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollTrue(ctx, 30*time.Second, "the released pod to be bound", func(context.Context) (bool, error) {
		return get().Spec.NodeName == "a", nil
	})
	if err != nil {
		t.Fatalf("the released pod was not bound: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
