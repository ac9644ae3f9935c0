package noderestriction

import (
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
)

// Nodes reads registered nodes: the server's node informer.
type Nodes interface {
	Get(name string) (*corev1.Node, error)
}

// podCertificateRequest: a node creates PodCertificateRequests only, each
// for one of its own pods, naming the node, the pod and its service
// account as they are, as upstream's NodeRestriction checks, so that a
// signer may trust what a request says about who it is for. A UID that
// differs may be an informer behind (a pod or node recreated under its
// name): that is an error the agent retries, not a Forbidden.
func (p *Plugin) podCertificateRequest(node string, a admission.Attributes) (forbidden, retry error) {
	if a.GetOperation() != admission.Create || a.GetSubresource() != "" {
		return fmt.Errorf("node %q may only create podcertificaterequests", node), nil
	}
	req, err := typed[*certificatesv1.PodCertificateRequest](a.GetObject(), "pod certificate request")
	if err != nil {
		return err, nil
	}
	ns, spec := a.GetNamespace(), req.Spec
	if string(spec.NodeName) != node {
		return fmt.Errorf("PodCertificateRequest.Spec.NodeName=%q, which is not the requesting node %q", spec.NodeName, node), nil
	}
	registered, err := p.nodes.Get(node)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("node %q named in the PodCertificateRequest is not registered yet: %w", node, err)
	case err != nil:
		return fmt.Errorf("reading node %q named in the PodCertificateRequest: %w", node, err), nil
	case registered.UID != spec.NodeUID:
		return nil, fmt.Errorf("PodCertificateRequest names node UID %q, not the running node's (%q)", spec.NodeUID, registered.UID)
	}
	pod, ok := p.pods.BoundPod(ns, spec.PodName)
	switch {
	case !ok:
		return nil, fmt.Errorf("pod %s/%s named in the PodCertificateRequest is not known bound yet", ns, spec.PodName)
	case pod.Node != node:
		return fmt.Errorf("pod %s/%s is not running on node %q named in the PodCertificateRequest", ns, spec.PodName, node), nil
	case pod.UID != spec.PodUID:
		return nil, fmt.Errorf("PodCertificateRequest for pod %s/%s names pod UID %q, not the running pod's (%q)", ns, spec.PodName, spec.PodUID, pod.UID)
	case pod.ServiceAccount != spec.ServiceAccountName:
		return fmt.Errorf("PodCertificateRequest for pod %s/%s names service account %q, not the pod's (%q)",
			ns, spec.PodName, spec.ServiceAccountName, pod.ServiceAccount), nil
	}
	return nil, nil
}
