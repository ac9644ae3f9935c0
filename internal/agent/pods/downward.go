package pods

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/api/v1/resource"
	"k8s.io/kubernetes/pkg/fieldpath"
)

// The downward API as the kubelet serves it, from upstream's own field and
// resource extraction (pkg/fieldpath, pkg/api/v1/resource); only what the
// kubelet knows itself (the node's IP, the sandbox's IPs, the node's
// allocatable) is supplied here.

// fieldValue is a pod field for env (fieldRef) and downwardAPI volumes:
// the kubelet's podFieldSelectorRuntimeValue.
func (m *Manager) fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return m.cfg.NodeIP, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.podIPs":
		ips := make([]string, 0, len(pod.Status.PodIPs))
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	}
	return fieldpath.ExtractFieldPathAsString(pod, path)
}

// containerResourceValue is a resourceFieldRef of an env entry of c (of
// the container it names, if another): a limit c does not set is the
// node's allocatable, as the kubelet reports it.
func (m *Manager) containerResourceValue(ctx context.Context, pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	allocatable, err := m.nodeAllocatable(ctx)
	if err != nil {
		return "", err
	}
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		return resource.ExtractResourceValueByContainerNameAndNodeAllocatable(ref, pod, ref.ContainerName, allocatable)
	}
	limited := c.DeepCopy()
	resource.MergeContainerResourceLimits(limited, allocatable)
	return resource.ExtractContainerResourceValue(ref, limited)
}

// nodeAllocatable is what the node reports allocatable: the limit of a
// container without one.
func (m *Manager) nodeAllocatable(ctx context.Context) (corev1.ResourceList, error) {
	node, err := m.client.CoreV1().Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("node %s for its allocatable resources: %w", m.cfg.NodeName, err)
	}
	return node.Status.Allocatable, nil
}
