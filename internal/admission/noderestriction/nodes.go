package noderestriction

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// nodes: a node registers and updates only itself, never sets labels
// reserved to administrators, and after registration changes no spec
// (taints, unschedulable, podCIDR): those are the control plane's.
func nodes(node string, a admission.Attributes) error {
	if a.GetName() != "" && a.GetName() != node {
		return fmt.Errorf("node %q may not %s node %q", node, verbOf(a.GetOperation()), a.GetName())
	}
	switch a.GetOperation() {
	case admission.Create:
		n, err := typed[*corev1.Node](a.GetObject(), "node")
		if err != nil {
			return err
		}
		if n.Name != node {
			return fmt.Errorf("node %q may not register node %q", node, n.Name)
		}
		return restrictedLabels(node, nil, n.Labels)
	case admission.Update:
		n, err := typed[*corev1.Node](a.GetObject(), "node")
		if err != nil {
			return err
		}
		old, err := typed[*corev1.Node](a.GetOldObject(), "node")
		if err != nil {
			return err
		}
		if a.GetSubresource() == "" && !apiequality.Semantic.DeepEqual(n.Spec, old.Spec) {
			return fmt.Errorf("node %q may not change its own spec", node)
		}
		return restrictedLabels(node, old.Labels, n.Labels)
	}
	return fmt.Errorf("node %q may not delete nodes", node)
}

// restrictedLabels refuses adding, changing or removing labels a node may
// not set on itself: anything under node-restriction.kubernetes.io/, and
// kubernetes.io/ or k8s.io/ labels other than the kubelet's own, as upstream.
func restrictedLabels(node string, old, updated map[string]string) error {
	var bad []string
	for _, key := range unionKeys(old, updated) {
		oldValue, hadIt := old[key]
		newValue, hasIt := updated[key]
		if hadIt == hasIt && oldValue == newValue {
			continue
		}
		if restricted(key) {
			bad = append(bad, key)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("node %q may not set, change or remove labels %s on itself", node, strings.Join(bad, ", "))
	}
	return nil
}

func unionKeys(a, b map[string]string) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// restricted reports whether a node must not set label key on itself.
func restricted(key string) bool {
	namespace, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	if inNamespace(namespace, corev1.LabelNamespaceNodeRestriction) {
		return true
	}
	if kubeletapis.IsKubeletLabel(key) {
		return false
	}
	return inNamespace(namespace, "kubernetes.io") || inNamespace(namespace, "k8s.io")
}

// inNamespace reports whether a label namespace is domain or a subdomain of it.
func inNamespace(namespace, domain string) bool {
	return namespace == domain || strings.HasSuffix(namespace, "."+domain)
}
