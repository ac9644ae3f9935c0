package disruption

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"

	"github.com/berth/berth/internal/informeropts"
)

// appsKinds are the apps/v1 collections upstream's controller waits to
// sync (ReplicaSets, Deployments, StatefulSets), with their list types.
var appsKinds = []struct {
	resource string
	obj      runtime.Object
	newList  func() runtime.Object
}{
	{"replicasets", &appsv1.ReplicaSet{}, func() runtime.Object { return &appsv1.ReplicaSetList{} }},
	{"deployments", &appsv1.Deployment{}, func() runtime.Object { return &appsv1.DeploymentList{} }},
	{"statefulsets", &appsv1.StatefulSet{}, func() runtime.Object { return &appsv1.StatefulSetList{} }},
}

// emptyWhereUnserved gives each apps kind the server does not serve an
// informer of nothing: upstream's controller waits for all of them to
// sync before it syncs any budget, and a collection that is not served
// never would. A pod owned by such a kind cannot exist, so nothing is
// lost; once the kind is served, the next start of the controller lists
// it.
func emptyWhereUnserved(ctx context.Context, factory informers.SharedInformerFactory, disc discovery.DiscoveryInterface) error {
	served, err := servedApps(disc)
	if err != nil {
		return err
	}
	for _, kind := range appsKinds {
		if !served[kind.resource] {
			informeropts.ReadThrough(factory, kind.obj, emptyListWatch{newList: kind.newList})
		}
	}
	return nil
}

// servedApps is the set of apps/v1 resources discovery lists.
func servedApps(disc discovery.DiscoveryInterface) (map[string]bool, error) {
	list, err := disc.ServerResourcesForGroupVersion(appsv1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovering apps/v1: %w", err)
	}
	served := make(map[string]bool, len(list.APIResources))
	for _, r := range list.APIResources {
		served[r.Name] = true
	}
	return served, nil
}

// emptyListWatch lists nothing and watches a stream that never sends.
type emptyListWatch struct{ newList func() runtime.Object }

func (lw emptyListWatch) List(metav1.ListOptions) (runtime.Object, error) { return lw.newList(), nil }
func (lw emptyListWatch) Watch(metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// IsWatchListSemanticsUnSupported: the reflector lists, then watches.
func (emptyListWatch) IsWatchListSemanticsUnSupported() bool { return true }
