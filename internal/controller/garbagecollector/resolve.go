package garbagecollector

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// resolver tells what an owner reference points at: first from the graph,
// and, when the graph has not seen the owner (an informer may lag behind a
// dependent created right after its owner), from a live read, so that a
// dependent is never deleted on a cache miss.
type resolver struct {
	graph  *graph
	client metadata.Interface
	// mu guards mapper, which rediscovery replaces while workers map.
	mu     sync.RWMutex
	mapper meta.RESTMapper
}

// setMapper makes m the mapper of owner references from now on.
func (r *resolver) setMapper(m meta.RESTMapper) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mapper = m
}

func (r *resolver) currentMapper() meta.RESTMapper {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.mapper
}

func (r *resolver) ownerState(ctx context.Context, ref metav1.OwnerReference, dependentNS string) (ownerState, error) {
	mapping, err := r.mapping(ref)
	if err != nil {
		return 0, err
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if namespaced && dependentNS == "" {
		return ownerInvalid, nil
	}
	if owner, ok := r.graph.get(ref.UID); ok && owner.matches(ref, dependentNS) {
		return stateOf(owner.deletingDependents()), nil
	}
	ownerNS := ""
	if namespaced {
		ownerNS = dependentNS
	}
	live, err := r.client.Resource(mapping.Resource).Namespace(ownerNS).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ownerDangling, nil
	case err != nil:
		return 0, fmt.Errorf("read owner %s %q: %w", ref.Kind, ref.Name, err)
	case live.UID != ref.UID:
		return ownerDangling, nil
	}
	return stateOf(toNode(mapping.Resource, mapping.GroupVersionKind.GroupKind(), live).deletingDependents()), nil
}

// inOtherNamespace says ref's UID belongs to a namespaced object outside
// the dependent's namespace: a reference that can never hold, which
// upstream reports with an OwnerRefInvalidNamespace event.
func (r *resolver) inOtherNamespace(ref metav1.OwnerReference, dependentNS string) bool {
	owner, ok := r.graph.get(ref.UID)
	return ok && owner.namespace != "" && owner.namespace != dependentNS
}

func stateOf(waiting bool) ownerState {
	if waiting {
		return ownerWaiting
	}
	return ownerSolid
}

func (r *resolver) mapping(ref metav1.OwnerReference) (*meta.RESTMapping, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("owner reference %s %q: %w", ref.Kind, ref.Name, err)
	}
	mapping, err := r.currentMapper().RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		return nil, fmt.Errorf("owner reference %s %q: %w", ref.Kind, ref.Name, err)
	}
	return mapping, nil
}

// toNode keeps what the collector needs of an object's metadata.
func toNode(resource schema.GroupVersionResource, kind schema.GroupKind, m *metav1.PartialObjectMetadata) node {
	return node{
		uid: m.UID, resource: resource, kind: kind,
		namespace: m.Namespace, name: m.Name,
		owners:     m.OwnerReferences,
		deleting:   m.DeletionTimestamp != nil,
		finalizers: m.Finalizers,
	}
}
