// Package nodewait waits, in tests and benchmarks, for nodes they
// registered to become schedulable: TaintNodesByCondition admission gives every new Node
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

// Untainted waits until none of the named nodes (every node when none is
// named) has the not-ready taint, for at most timeout, looking once a
// second. A named node that does not exist yet counts as tainted.
func Untainted(ctx context.Context, cs kubernetes.Interface, timeout time.Duration, names ...string) error {
	deadline := time.Now().Add(timeout)
	for {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		tainted := stillTainted(nodes.Items, names)
		if len(tainted) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nodes %v still have the %s taint after %s", tainted, corev1.TaintNodeNotReady, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second): //wait:intended bounded by the deadline; the error names the nodes still waited for
		}
	}
}

// stillTainted names the nodes among the named ones (all when none is
// named) that have the not-ready taint or are missing.
func stillTainted(nodes []corev1.Node, names []string) []string {
	var tainted []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if len(names) > 0 && !slices.Contains(names, n.Name) {
			continue
		}
		seen[n.Name] = true
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
			tainted = append(tainted, n.Name)
		}
	}
	for _, name := range names {
		if !seen[name] {
			tainted = append(tainted, name)
		}
	}
	return tainted
}
