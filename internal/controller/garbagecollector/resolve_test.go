package garbagecollector

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
)

func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Node"}, meta.RESTScopeRoot)
	return m
}

func liveObject(kind, namespace, name, uid string, finalizers ...string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid), Finalizers: finalizers},
	}
}

func TestResolverReadsLiveWhenTheGraphHasNotSeenTheOwner(t *testing.T) {
	now := metav1.Now()
	waiting := liveObject("ConfigMap", "ns", "waiting", "w-uid", metav1.FinalizerDeleteDependents)
	waiting.DeletionTimestamp = &now
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, []runtime.Object{
		liveObject("ConfigMap", "ns", "live", "live-uid"),
		liveObject("ConfigMap", "ns", "recreated", "new-uid"),
		waiting,
		liveObject("Node", "", "n1", "node-uid"),
	}...)
	r := &resolver{graph: newGraph(), mapper: testMapper(), client: client}
	cm := func(name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: types.UID(uid)}
	}
	cases := []struct {
		name string
		ref  metav1.OwnerReference
		ns   string
		want ownerState
	}{
		{"live owner", cm("live", "live-uid"), "ns", ownerSolid},
		{"absent owner", cm("absent", "a-uid"), "ns", ownerDangling},
		{"recreated owner", cm("recreated", "old-uid"), "ns", ownerDangling},
		{"owner in another namespace", cm("live", "live-uid"), "other", ownerDangling},
		{"owner in foreground deletion", cm("waiting", "w-uid"), "ns", ownerWaiting},
		{"cluster-scoped owner", metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}, "kube-node-lease", ownerSolid},
		{"namespaced owner of a cluster-scoped dependent", cm("live", "live-uid"), "", ownerInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.ownerState(context.Background(), tc.ref, tc.ns)
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}

	if _, err := r.ownerState(context.Background(), metav1.OwnerReference{APIVersion: "v1", Kind: "Unknown", Name: "x", UID: "x"}, "ns"); err == nil {
		t.Fatal("an owner of an unknown kind must be an error (retried), never dangling")
	}
}

func TestResolverTrustsTheGraphOnlyForTheSameObject(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// Nothing is live: an answer other than dangling came from the graph.
	r := &resolver{graph: newGraph(), mapper: testMapper(), client: metadatafake.NewSimpleMetadataClient(scheme)}
	owner := configMap("ns", "owner")
	r.graph.upsert(owner)
	ref := ownedBy(owner, true)
	if got, err := r.ownerState(context.Background(), ref, "ns"); err != nil || got != ownerSolid {
		t.Fatalf("owner known to the graph: got %v, %v", got, err)
	}
	if got, err := r.ownerState(context.Background(), ref, "other"); err != nil || got != ownerDangling {
		t.Fatalf("the same UID seen from another namespace: got %v, %v", got, err)
	}
	if !r.inOtherNamespace(ref, "other") || r.inOtherNamespace(ref, "ns") {
		t.Fatal("inOtherNamespace must flag only the cross-namespace reference")
	}
}
