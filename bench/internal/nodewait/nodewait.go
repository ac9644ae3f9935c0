// Package nodewait waits, in the benchmarks, for nodes they registered to
// become schedulable: TaintNodesByCondition admission gives every new Node
// the not-ready NoSchedule taint, and berth server's node lifecycle
// controller lifts it once the node is Ready. Measuring before then would
// time pods waiting for it.
package nodewait

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Untainted waits until no node has the not-ready taint, for at most
// timeout, looking once a second.
func Untainted(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		tainted := 0
		for _, n := range nodes.Items {
			if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
				tainted++
			}
		}
		if tainted == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes still have the %s taint after %s", tainted, len(nodes.Items), corev1.TaintNodeNotReady, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
