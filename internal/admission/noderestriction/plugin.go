// Package noderestriction is berth's NodeRestriction admission plugin: it
// checks the bodies of node agents' writes against what the Node
// authorizer (internal/auth/node) can only see by name. A node may
// register and update only itself (no node-restriction.kubernetes.io/ or
// other non-kubelet kubernetes.io labels, no spec changes after
// registration), write only its own Lease, report only its own pods'
// status (and through it change no labels, annotations or resource claim
// statuses), write only its own CSINode, delete only its own pods once they are terminating, request
// service-account tokens only bound to its own pods, create pod
// certificate requests only for its own pods as they are, and report
// events only as itself. It creates no pods at all: berth has no static
// pods, so there are no mirror pods to allow.
//
// Upstream's plugin works on k8s.io/kubernetes' internal types and would
// link its whole tree into the binary; the rules here follow it where berth
// serves the same resources (TestPodStatusMatchesUpstream compares them).
package noderestriction

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"

	"github.com/berth/berth/internal/auth/node"
)

// Plugin is the NodeRestriction validating admission plugin.
type Plugin struct {
	pods  PodBindings
	nodes Nodes
}

// PodBindings tells which node a pod is bound to, and who it is: the Node
// authorizer's graph (internal/auth/node.Graph), which follows every pod.
type PodBindings interface {
	BoundPod(namespace, name string) (node.PodIdentity, bool)
}

// New returns the plugin; pods and nodes answer for what nodes ask on
// their pods' behalf (service-account tokens, pod certificates).
func New(pods PodBindings, nodes Nodes) *Plugin { return &Plugin{pods: pods, nodes: nodes} }

var (
	_ admission.MutationInterface   = (*Plugin)(nil)
	_ admission.ValidationInterface = (*Plugin)(nil)
)

// Handles implements admission.Interface: node writes of every kind.
func (*Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update || op == admission.Delete
}

// Admit implements admission.MutationInterface, though it changes nothing:
// upstream's NodeRestriction checks in the mutating phase, so a node's
// forbidden write is a 403 before the registry's validation could answer
// 422 about it.
func (p *Plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	return p.check(a)
}

// AdmitReadsOnly implements internalform.ReadOnlyAdmitter: Admit changes
// nothing, so the plugins after it keep their converted form.
func (*Plugin) AdmitReadsOnly() {}

// Validate implements admission.ValidationInterface: the same check on the
// object as the mutating plugins after this one left it.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	return p.check(a)
}

func (p *Plugin) check(a admission.Attributes) error {
	name, ok := node.Name(a.GetUserInfo())
	if !ok {
		return nil
	}
	var err error
	switch a.GetResource().GroupResource().String() {
	case "pods":
		err = pods(name, a)
	case "nodes":
		err = nodes(name, a)
	case "leases.coordination.k8s.io":
		err = leases(name, a)
	case "csinodes.storage.k8s.io":
		err = csiNodes(name, a)
	case "events", "events.events.k8s.io":
		err = events(name, a)
	case "serviceaccounts":
		err = p.serviceAccountToken(name, a)
	case "podcertificaterequests.certificates.k8s.io":
		var retry error
		if err, retry = p.podCertificateRequest(name, a); retry != nil {
			return apierrors.NewInternalError(retry)
		}
	}
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

// typed returns obj as T, or an error naming what arrived instead.
func typed[T any](obj any, what string) (T, error) {
	t, ok := obj.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("unexpected %s object %T", what, obj)
	}
	return t, nil
}
