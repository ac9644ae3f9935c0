package noderestriction

import (
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/admission"
)

// serviceAccountToken: a node may request service-account tokens only
// bound to one of its own pods, so that no token it obtains outlives the
// pod or works for a pod elsewhere (as upstream's NodeRestriction).
func (p *Plugin) serviceAccountToken(node string, a admission.Attributes) error {
	if a.GetSubresource() != "token" {
		return fmt.Errorf("node %q may not %s serviceaccounts", node, verbOf(a.GetOperation()))
	}
	req, err := typed[*authenticationv1.TokenRequest](a.GetObject(), "token request")
	if err != nil {
		return err
	}
	ref := req.Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" {
		return fmt.Errorf("node %q may only request tokens bound to a pod", node)
	}
	if pod, ok := p.pods.BoundPod(a.GetNamespace(), ref.Name); !ok || pod.Node != node {
		return fmt.Errorf("node %q may only request tokens bound to its own pods, not to pod %s/%s", node, a.GetNamespace(), ref.Name)
	}
	return nil
}
