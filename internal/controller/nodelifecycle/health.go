package nodelifecycle

import (
	"context"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var everything = labels.Everything()

// Taints the controller manages, as upstream names them.
const (
	TaintUnreachable = "node.kubernetes.io/unreachable"
	TaintNotReady    = "node.kubernetes.io/not-ready"
)

// conditionsMadeUnknown are the node-agent-owned conditions that become
// Unknown when the agent goes silent.
var conditionsMadeUnknown = []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}

// monitorHealth marks a silent node Unknown and keeps its NoExecute taints in
// step with its Ready condition; it returns the node as it now is.
func (c *Controller) monitorHealth(ctx context.Context, node *v1.Node, now time.Time) (*v1.Node, error) {
	if c.silentSince(node, now) > c.cfg.GracePeriod && readyStatus(node) != v1.ConditionUnknown {
		updated := node.DeepCopy()
		markUnknown(updated, now)
		var err error
		if updated, err = c.cfg.Client.CoreV1().Nodes().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return node, err
		}
		c.log.Info("node stopped posting status", "node", node.Name)
		node = updated
	}
	want := desiredTaint(readyStatus(node))
	taints, changed := reconcileTaints(node.Spec.Taints, want, now)
	if !changed {
		return node, nil
	}
	updated := node.DeepCopy()
	updated.Spec.Taints = taints
	return c.cfg.Client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{})
}

// silentSince is how long ago, on this controller's clock, the node's
// heartbeat (Lease renewal, or a Ready condition heartbeat) last advanced.
func (c *Controller) silentSince(node *v1.Node, now time.Time) time.Duration {
	beat := readyHeartbeat(node)
	if l := c.lease(node.Name); l != nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(beat) {
		beat = l.Spec.RenewTime.Time
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hb, seen := c.heartbeats[node.Name]
	if !seen || !beat.Equal(hb.renewTime) {
		hb = heartbeat{renewTime: beat, observedAt: now}
		c.heartbeats[node.Name] = hb
	}
	return now.Sub(hb.observedAt)
}

func readyHeartbeat(node *v1.Node) time.Time {
	for _, cond := range node.Status.Conditions {
		if cond.Type == v1.NodeReady {
			return cond.LastHeartbeatTime.Time
		}
	}
	return time.Time{}
}

func readyStatus(node *v1.Node) v1.ConditionStatus {
	for _, cond := range node.Status.Conditions {
		if cond.Type == v1.NodeReady {
			return cond.Status
		}
	}
	return v1.ConditionUnknown
}

func markUnknown(node *v1.Node, now time.Time) {
	for _, t := range conditionsMadeUnknown {
		i := slices.IndexFunc(node.Status.Conditions, func(c v1.NodeCondition) bool { return c.Type == t })
		if i < 0 {
			node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{Type: t})
			i = len(node.Status.Conditions) - 1
		}
		cond := &node.Status.Conditions[i]
		cond.Status = v1.ConditionUnknown
		cond.Reason = "NodeStatusUnknown"
		cond.Message = "Kubelet stopped posting node status."
		cond.LastTransitionTime = metav1.NewTime(now)
	}
}

// desiredTaint is the NoExecute taint key a node in this Ready state carries ("" = none).
func desiredTaint(ready v1.ConditionStatus) string {
	switch ready {
	case v1.ConditionFalse:
		return TaintNotReady
	case v1.ConditionUnknown:
		return TaintUnreachable
	}
	return ""
}

// reconcileTaints keeps exactly the wanted managed NoExecute taint, leaving
// every other taint (and an existing wanted one, with its TimeAdded) alone.
func reconcileTaints(taints []v1.Taint, want string, now time.Time) ([]v1.Taint, bool) {
	out := make([]v1.Taint, 0, len(taints)+1)
	has, changed := false, false
	for _, t := range taints {
		managed := t.Effect == v1.TaintEffectNoExecute && (t.Key == TaintUnreachable || t.Key == TaintNotReady)
		switch {
		case managed && t.Key == want:
			has = true
			out = append(out, t)
		case managed:
			changed = true
		default:
			out = append(out, t)
		}
	}
	if want != "" && !has {
		added := metav1.NewTime(now)
		out = append(out, v1.Taint{Key: want, Effect: v1.TaintEffectNoExecute, TimeAdded: &added})
		changed = true
	}
	return out, changed
}
