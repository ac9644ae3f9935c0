package noderestriction

import (
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apiserver/pkg/admission"
)

// leases: only the node's own Lease in kube-node-lease.
func leases(node string, a admission.Attributes) error {
	if a.GetOperation() == admission.Delete {
		return fmt.Errorf("node %q may not delete leases", node)
	}
	l, err := typed[*coordinationv1.Lease](a.GetObject(), "lease")
	if err != nil {
		return err
	}
	if l.Namespace != corev1.NamespaceNodeLease || l.Name != node {
		return fmt.Errorf("node %q may only write its own Lease %s/%s, not %s/%s", node, corev1.NamespaceNodeLease, node, l.Namespace, l.Name)
	}
	return nil
}

// events: a node reports only as itself (source host or reporting
// instance), so it cannot speak for another node or a controller.
func events(node string, a admission.Attributes) error {
	if a.GetOperation() == admission.Delete {
		return fmt.Errorf("node %q may not delete events", node)
	}
	objs := []any{a.GetObject()}
	if a.GetOperation() == admission.Update {
		objs = append(objs, a.GetOldObject())
	}
	for _, obj := range objs {
		reporter, err := eventReporter(obj)
		if err != nil {
			return err
		}
		if reporter != node {
			return fmt.Errorf("node %q may only write events it reports itself (source.host or reportingInstance %q, got %q)", node, node, reporter)
		}
	}
	return nil
}

// eventReporter is the node an event says reported it.
func eventReporter(obj any) (string, error) {
	switch e := obj.(type) {
	case *corev1.Event:
		if e.Source.Host != "" {
			return e.Source.Host, nil
		}
		return e.ReportingInstance, nil
	case *eventsv1.Event:
		if e.ReportingInstance != "" {
			return e.ReportingInstance, nil
		}
		return e.DeprecatedSource.Host, nil
	}
	return "", fmt.Errorf("unexpected event object %T", obj)
}

// csiNodes: a node writes only the CSINode named after it; the Node
// authorizer cannot see a create's name, so this is where it is checked.
func csiNodes(node string, a admission.Attributes) error {
	if a.GetName() != node {
		return fmt.Errorf("node %q may only write its own CSINode %q, not %q", node, node, a.GetName())
	}
	return nil
}
