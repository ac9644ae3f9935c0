package tables

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nodePrinter() printer {
	info, status := corev1.NodeSystemInfo{}.SwaggerDoc(), corev1.NodeStatus{}.SwaggerDoc()
	return typed(
		[]metav1.TableColumnDefinition{
			nameColumn(),
			column("Status", "The status of the node"),
			column("Roles", "The roles of the node"),
			ageColumn(),
			column("Version", info["kubeletVersion"]),
			wideColumn("Internal-IP", status["addresses"]),
			wideColumn("External-IP", status["addresses"]),
			wideColumn("OS-Image", info["osImage"]),
			wideColumn("Kernel-Version", info["kernelVersion"]),
			wideColumn("Container-Runtime", info["containerRuntimeVersion"]),
		},
		func(node *corev1.Node, now time.Time) metav1.TableRow {
			i := node.Status.NodeInfo
			return cells(node.Name, nodeStatus(node), orNone(strings.Join(nodeRoles(node), ",")), since(node.CreationTimestamp, now), i.KubeletVersion,
				nodeAddress(node, corev1.NodeInternalIP), nodeAddress(node, corev1.NodeExternalIP),
				orUnknown(i.OSImage), orUnknown(i.KernelVersion), orUnknown(i.ContainerRuntimeVersion))
		})
}

// nodeStatus is Ready, NotReady or Unknown (no Ready condition yet), with
// SchedulingDisabled added for a cordoned node.
func nodeStatus(node *corev1.Node) string {
	status := []string{"Unknown"}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status[0] = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status[0] = "Ready"
			}
		}
	}
	if node.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	return strings.Join(status, ",")
}

// nodeRoles reads the node-role.kubernetes.io/<role> and kubernetes.io/role
// labels, sorted and without duplicates.
func nodeRoles(node *corev1.Node) []string {
	const rolePrefix, roleLabel = "node-role.kubernetes.io/", "kubernetes.io/role"
	set := map[string]bool{}
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, rolePrefix) && len(k) > len(rolePrefix):
			set[strings.TrimPrefix(k, rolePrefix)] = true
		case k == roleLabel && v != "":
			set[v] = true
		}
	}
	roles := make([]string, 0, len(set))
	for r := range set {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return roles
}

func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
