package server

import (
	"context"
	"errors"

	"k8s.io/apiserver/pkg/admission"
)

// readiness is admission.Handler's wait for a plugin's informers: at most
// ten seconds, then whether they have synced.
type readiness interface {
	WaitForReady() bool
}

// syncedFirst runs a plugin that reads only its informers' caches (no live
// lookup when a name is missing) once those caches have listed.
// kube-apiserver reports ready only after its informers have synced, so no
// request reaches such a plugin before; berth serves as soon as it starts,
// and without this a pod naming a system PriorityClass would be refused
// ("not found") in the first moments of a fresh server.
type syncedFirst struct {
	plugin admission.Interface
	ready  readiness
}

// waitForSync wraps plugin, which must embed admission.Handler with its
// informers' ready function set.
func waitForSync[P interface {
	admission.Interface
	readiness
}](plugin P) admission.Interface {
	return &syncedFirst{plugin: plugin, ready: plugin}
}

var (
	_ admission.MutationInterface   = (*syncedFirst)(nil)
	_ admission.ValidationInterface = (*syncedFirst)(nil)
)

// errNotReady is upstream plugins' answer when their informers never sync.
var errNotReady = errors.New("not yet ready to handle request")

func (s *syncedFirst) Handles(op admission.Operation) bool { return s.plugin.Handles(op) }

func (s *syncedFirst) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	m, ok := s.plugin.(admission.MutationInterface)
	if !ok {
		return nil
	}
	if !s.ready.WaitForReady() {
		return admission.NewForbidden(a, errNotReady)
	}
	return m.Admit(ctx, a, o)
}

func (s *syncedFirst) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	v, ok := s.plugin.(admission.ValidationInterface)
	if !ok {
		return nil
	}
	if !s.ready.WaitForReady() {
		return admission.NewForbidden(a, errNotReady)
	}
	return v.Validate(ctx, a, o)
}
