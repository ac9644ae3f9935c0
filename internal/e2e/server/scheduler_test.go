package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/wait"
)

// The server's scheduler binds pods through the API under its own identity
// and reports pods that fit nowhere, upstream-style.
func TestServerSchedulesPods(t *testing.T) {
	cs := cluster.Start(t, berthBin, cluster.Options{}).Admin
	ctx := context.Background()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The node IPAM controller may write the Node meanwhile (its podCIDR).
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := cs.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status = corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, cpu := range map[string]string{"small": "500m", "huge": "8"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	waitForPod(t, cs, "small", func(p *corev1.Pod) bool { return p.Spec.NodeName == "worker-1" })
	waitForPod(t, cs, "huge", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
				return strings.Contains(c.Message, "0/1 nodes are available: 1 Insufficient cpu")
			}
		}
		return false
	})
	huge, _ := cs.CoreV1().Pods("default").Get(ctx, "huge", metav1.GetOptions{})
	if huge.Spec.NodeName != "" {
		t.Errorf("a pod larger than any node was bound to %s", huge.Spec.NodeName)
	}
}

func waitForPod(t *testing.T, cs kubernetes.Interface, name string, cond func(*corev1.Pod) bool) {
	t.Helper()
	wait.UntilCtx(t, 2*time.Minute, "pod "+name+" to reach the expected state", func(ctx context.Context) error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !cond(p) {
			return fmt.Errorf("spec.nodeName=%q status=%+v", p.Spec.NodeName, p.Status)
		}
		return nil
	})
}
