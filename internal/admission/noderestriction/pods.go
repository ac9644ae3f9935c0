package noderestriction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
)

// pods: status updates (pod_status.go) and deletion of the node's own pods; deletion only
// once the pod is terminating (the agent finishes what someone else began).
// No creation (no mirror pods in berth), no spec changes, no other
// subresources.
func pods(node string, a admission.Attributes) error {
	op, sub := a.GetOperation(), a.GetSubresource()
	switch {
	case op == admission.Create && sub == "":
		return fmt.Errorf("node %q may not create pods (berth has no static or mirror pods)", node)
	case op == admission.Update && sub == "status":
		return podStatus(node, a)
	case op == admission.Delete && sub == "":
		old, err := ownPodObject(node, a, "delete")
		if err != nil {
			return err
		}
		if old.DeletionTimestamp == nil {
			return fmt.Errorf("node %q may delete pod %s/%s only once it is terminating", node, old.Namespace, old.Name)
		}
		return nil
	case sub == "":
		return fmt.Errorf("node %q may not change the spec of pod %s/%s", node, a.GetNamespace(), a.GetName())
	}
	return fmt.Errorf("node %q may not %s pods/%s", node, verbOf(op), sub)
}

// ownPodObject returns the stored pod a write applies to, if it is bound to node.
func ownPodObject(node string, a admission.Attributes, verb string) (*corev1.Pod, error) {
	old, err := typed[*corev1.Pod](a.GetOldObject(), "pod")
	if err != nil {
		return nil, err
	}
	if old.Spec.NodeName != node {
		return nil, fmt.Errorf("node %q may not %s pod %s/%s, which is not bound to it", node, verb, old.Namespace, old.Name)
	}
	return old, nil
}

func verbOf(op admission.Operation) string {
	switch op {
	case admission.Create:
		return "create"
	case admission.Delete:
		return "delete"
	}
	return "update"
}
