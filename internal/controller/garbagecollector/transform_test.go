package garbagecollector

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestTransformKeepsOnlyWhatTheCollectorReads(t *testing.T) {
	now := metav1.Now()
	in := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Namespace: "ns", UID: "u", ResourceVersion: "7", DeletionTimestamp: &now,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "ou"}},
		Finalizers:      []string{metav1.FinalizerDeleteDependents},
		Labels:          map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}}
	out, err := keepCollectionMetadata(in)
	if err != nil {
		t.Fatal(err)
	}
	m := out.(*metav1.PartialObjectMetadata)
	if m.Labels != nil || m.Annotations != nil || m.ManagedFields != nil {
		t.Fatalf("labels, annotations and managedFields must go: %+v", m.ObjectMeta)
	}
	// What the graph builder and the collector read, and the
	// resourceVersion informers resume from and migrations compare.
	want := in.DeepCopy()
	want.Labels, want.Annotations, want.ManagedFields = nil, nil, nil
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("the collector's view changed: got %+v, want %+v", m.ObjectMeta, want.ObjectMeta)
	}

	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: m}
	if got, _ := keepCollectionMetadata(tombstone); !reflect.DeepEqual(got, tombstone) {
		t.Fatalf("a tombstone passes unchanged, got %+v", got)
	}
}
