package disruption

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestUnservedAppsKindsSyncEmpty: a kind discovery lists is read from the
// server; one it does not list syncs at once with nothing in it, so the
// controller's wait for its caches ends.
func TestUnservedAppsKindsSyncEmpty(t *testing.T) {
	client := fake.NewClientset(
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "deploy", Namespace: "ns"}},
	)
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "replicasets", Namespaced: true, Kind: "ReplicaSet"}}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	if err := emptyWhereUnserved(ctx, factory, client.Discovery()); err != nil {
		t.Fatal(err)
	}
	replicaSets, deployments, statefulSets := factory.Apps().V1().ReplicaSets(), factory.Apps().V1().Deployments(), factory.Apps().V1().StatefulSets()
	replicaSets.Informer()
	deployments.Informer()
	statefulSets.Informer()
	factory.Start(ctx.Done())
	defer factory.Shutdown() // after cancel below: Shutdown waits for the informers to stop
	defer cancel()
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			t.Fatalf("the %v informer did not sync within the test's deadline", typ)
		}
	}
	if got, _ := replicaSets.Lister().List(labels.Everything()); len(got) != 1 {
		t.Errorf("served replicasets: %d listed, want the one the server holds", len(got))
	}
	if got, _ := deployments.Lister().List(labels.Everything()); len(got) != 0 {
		t.Errorf("unserved deployments: %d listed, want none", len(got))
	}
	if got, _ := statefulSets.Lister().List(labels.Everything()); len(got) != 0 {
		t.Errorf("unserved statefulsets: %d listed, want none", len(got))
	}
}
