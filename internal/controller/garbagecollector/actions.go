package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"
)

// writer makes the collector's three kinds of change through the API.
type writer struct {
	client metadata.Interface
}

// delete deletes n if it is still the object with n's UID.
func (w writer) delete(ctx context.Context, n node, policy metav1.DeletionPropagation) error {
	err := w.client.Resource(n.resource).Namespace(n.namespace).Delete(ctx, n.name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &n.uid},
		PropagationPolicy: &policy,
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or replaced by another object of that name
	}
	return err
}

// removeOwners drops the references to owners from n's ownerReferences.
func (w writer) removeOwners(ctx context.Context, n node, owners []types.UID) error {
	return w.patchMetadata(ctx, n, func(m *metav1.PartialObjectMetadata) (string, any, bool) {
		kept := slices.DeleteFunc(slices.Clone(m.OwnerReferences), func(r metav1.OwnerReference) bool { return slices.Contains(owners, r.UID) })
		return "ownerReferences", kept, len(kept) != len(m.OwnerReferences)
	})
}

// unblockOwners makes every reference of n that blocks its owner's
// foreground deletion stop blocking it.
func (w writer) unblockOwners(ctx context.Context, n node) error {
	return w.patchMetadata(ctx, n, func(m *metav1.PartialObjectMetadata) (string, any, bool) {
		refs := slices.Clone(m.OwnerReferences)
		changed := false
		for i := range refs {
			if refs[i].BlockOwnerDeletion != nil && *refs[i].BlockOwnerDeletion {
				refs[i].BlockOwnerDeletion, changed = ptr.To(false), true
			}
		}
		return "ownerReferences", refs, changed
	})
}

// removeFinalizer drops finalizer from n, which lets a deleting object go.
func (w writer) removeFinalizer(ctx context.Context, n node, finalizer string) error {
	return w.patchMetadata(ctx, n, func(m *metav1.PartialObjectMetadata) (string, any, bool) {
		kept := slices.DeleteFunc(slices.Clone(m.Finalizers), func(f string) bool { return f == finalizer })
		return "finalizers", kept, len(kept) != len(m.Finalizers)
	})
}

// patchMetadata reads n afresh, lets change compute one new metadata list,
// and writes it with a merge patch conditioned on the resourceVersion read,
// so that a concurrent writer's change is never lost (the caller retries
// on conflict). A list field is replaced whole by a merge patch, hence the
// read.
func (w writer) patchMetadata(ctx context.Context, n node, change func(*metav1.PartialObjectMetadata) (field string, value any, changed bool)) error {
	resource := w.client.Resource(n.resource).Namespace(n.namespace)
	current, err := resource.Get(ctx, n.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s %s: %w", n.resource.Resource, n.name, err)
	}
	if current.UID != n.uid {
		return nil
	}
	field, value, changed := change(current)
	if !changed {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{field: value, "resourceVersion": current.ResourceVersion}})
	if err != nil {
		return err
	}
	if _, err := resource.Patch(ctx, n.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch %s of %s %s: %w", field, n.resource.Resource, n.name, err)
	}
	return nil
}
