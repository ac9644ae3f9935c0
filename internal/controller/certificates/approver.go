package certificates

import (
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
)

// NodeGetter reads Nodes (client-go's NodeLister satisfies it).
type NodeGetter interface {
	Get(name string) (*corev1.Node, error)
	List(selector labels.Selector) ([]*corev1.Node, error)
}

// verdict is the approver's decision on one CSR.
type verdict int

const (
	// undecided: not a request this approver may decide (another signer, or
	// a requester who is neither a bootstrapper nor the node itself); it
	// stays pending for an administrator (kubectl certificate approve).
	undecided verdict = iota
	approve
	deny
)

// decide applies the approval policy of the CSR's signer: decideClient or
// decideServing. Other signers' requests are not this approver's to decide.
func decide(csr *certificatesv1.CertificateSigningRequest, nodes NodeGetter, claims *addressClaims) (verdict, string, error) {
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		return decideClient(csr, nodes)
	case certificatesv1.KubeletServingSignerName:
		return decideServing(csr, nodes, claims)
	}
	return undecided, "", nil
}

// decideClient applies the approval policy to a kubelet client CSR:
//   - a node (system:node:N) may renew only its own name;
//   - a bootstrapper (token) may request any node name, except one whose Node
//     exists and is Ready: a live node's identity is not handed to whoever
//     holds a join token. A node that lost its key can rejoin once its Node
//     is NotReady (about 40 s after its agent stops) or deleted.
//
// Requests whose subject or usages are not a node client certificate are
// denied outright, whoever sends them.
func decideClient(csr *certificatesv1.CertificateSigningRequest, nodes NodeGetter) (verdict, string, error) {
	req, err := parseRequest(csr)
	if err != nil {
		return deny, err.Error(), nil
	}
	name, err := checkNodeClient(req, csr.Spec.Usages)
	if err != nil {
		return deny, err.Error(), nil
	}
	requester := csr.Spec.Username
	switch {
	case requester == nodeUserPrefix+name && slices.Contains(csr.Spec.Groups, nodesGroup):
		return approve, "node " + name + " renews its own client certificate", nil
	case slices.Contains(csr.Spec.Groups, nodesGroup):
		return deny, fmt.Sprintf("%s may not request a certificate for node %s", requester, name), nil
	case slices.Contains(csr.Spec.Groups, bootstrappers):
		ready, err := nodeReady(nodes, name)
		if err != nil {
			return undecided, "", err
		}
		if ready {
			return deny, fmt.Sprintf("node %s already exists and is Ready; a join token cannot take over a live node's identity (delete the Node, or wait until it is NotReady)", name), nil
		}
		return approve, fmt.Sprintf("%s joins as node %s", requester, name), nil
	}
	return undecided, "", nil
}

func nodeReady(nodes NodeGetter, name string) (bool, error) {
	n, err := nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read node %s: %w", name, err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, nil
		}
	}
	return false, nil
}
