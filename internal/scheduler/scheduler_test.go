package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// bindingReactor makes the fake clientset honour pods/binding the way the API
// server does for a plain bind (set spec.nodeName if unset), so the loop can
// be tested without a server. The real constraint checks are the API server's.
func bindingReactor(client *fake.Clientset) k8stesting.ReactionFunc {
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		create := action.(k8stesting.CreateAction)
		if create.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := create.GetObject().(*v1.Binding)
		obj, err := client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" {
			return true, nil, fmt.Errorf("pod %s is already bound", pod.Name)
		}
		pod.Spec.NodeName = b.Target.Name
		return true, b, client.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace)
	}
}

func TestSchedulerBindsAndReportsUnschedulable(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", bindingReactor(client))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	for _, n := range []*v1.Node{testNode("a", "2", "4Gi"), testNode("b", "2", "4Gi"), testNode("c", "64", "64Gi", notReady)} {
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const fitting = 6 // 6 x 500m on two 2-cpu nodes
	for i := range fitting {
		if _, err := client.CoreV1().Pods("default").Create(ctx, testPod(fmt.Sprintf("p%d", i), "500m", "256Mi"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	huge := testPod("huge", "16", "1Gi")
	other := testPod("other-scheduler", "100m", "1Mi", func(p *v1.Pod) { p.Spec.SchedulerName = "someone-else" })
	for _, p := range []*v1.Pod{huge, other} {
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	s := New(Config{Client: client})
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	var pods *v1.PodList
	err := wait.PollTrue(ctx, 30*time.Second, "the pods to be bound and huge marked unschedulable", func(ctx context.Context) (bool, error) {
		var err error
		pods, err = client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		bound, marked := 0, false
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
			if c := podCondition(&p, v1.PodScheduled); p.Name == "huge" && c != nil && c.Reason == v1.PodReasonUnschedulable {
				marked = true
			}
		}
		return bound == fitting && marked, nil
	})
	if err != nil {
		t.Fatalf("scheduler did not converge: %v", err)
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		perNode[p.Spec.NodeName]++
		switch p.Name {
		case "huge":
			want := "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 Insufficient cpu."
			if c := podCondition(&p, v1.PodScheduled); c.Message != want {
				t.Errorf("huge: message %q, want %q", c.Message, want)
			}
		case "other-scheduler":
			if p.Spec.NodeName != "" {
				t.Errorf("a pod for another scheduler was bound to %s", p.Spec.NodeName)
			}
		}
	}
	if perNode["a"] != 3 || perNode["b"] != 3 || perNode["c"] != 0 {
		t.Errorf("placement %v; want 3 on a, 3 on b (spread, least allocated), none on the not-ready c", perNode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
