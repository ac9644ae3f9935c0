package noderestriction

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"
)

// podStatus is upstream's admitPodStatus
// (plugin/pkg/admission/noderestriction): a node reports the status of its
// own pods and nothing else through pods/status, so labels (which select
// the pod into Services, ReplicaSets and NetworkPolicies) and the resource
// claim statuses (which the DRA controller owns) stay as they were. berth
// also refuses annotation changes, stricter than upstream: annotations
// carry berth-private state (internal.berth.io/) a node must not write.
// ownerReferences need no check here: the status strategy keeps the
// stored ones, as upstream's does.
func podStatus(node string, a admission.Attributes) error {
	old, err := typed[*corev1.Pod](a.GetOldObject(), "pod")
	if err != nil {
		return err
	}
	if old.Spec.NodeName != node {
		return fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node)
	}
	pod, err := typed[*corev1.Pod](a.GetObject(), "pod")
	if err != nil {
		return err
	}
	switch {
	case !maps.Equal(old.Labels, pod.Labels):
		return fmt.Errorf("node %q cannot update labels through pod status", node)
	case !maps.Equal(old.Annotations, pod.Annotations):
		return fmt.Errorf("node %q cannot update annotations through pod status", node)
	case !apiequality.Semantic.DeepEqual(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses):
		return fmt.Errorf("node %q cannot update resource claim statues", node) // sic: upstream's words
	case !apiequality.Semantic.DeepEqual(old.Status.ExtendedResourceClaimStatus, pod.Status.ExtendedResourceClaimStatus):
		return fmt.Errorf("node %q cannot update extended resource claim status", node)
	case !apiequality.Semantic.DeepEqual(old.Status.NodeAllocatableResourceClaimStatuses, pod.Status.NodeAllocatableResourceClaimStatuses):
		return fmt.Errorf("node %q cannot update node allocatable resource claim statuses", node)
	}
	return nil
}
