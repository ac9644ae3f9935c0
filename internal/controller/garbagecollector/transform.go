package garbagecollector

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keepCollectionMetadata is the informers' transform: it keeps only the
// fields the collector reads (and the resourceVersion the informer resumes
// from), so that caching every pod's metadata does not also cache its
// labels, annotations and managedFields.
func keepCollectionMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil // e.g. a tombstone: its object went through here already
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			DeletionTimestamp: m.DeletionTimestamp, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
		},
	}, nil
}
