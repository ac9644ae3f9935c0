package garbagecollector

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestDiscoveryRetriesAndKeepsCollectableResources(t *testing.T) {
	client := fake.NewClientset()
	client.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"get", "list", "watch", "delete"}},
			{Name: "events", Namespaced: true, Kind: "Event", Verbs: []string{"get", "list", "watch", "delete"}},
			{Name: "bindings", Namespaced: true, Kind: "Binding", Verbs: []string{"create"}},
		}},
		{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "leases", Namespaced: true, Kind: "Lease", Verbs: []string{"get", "list", "watch", "delete"}},
		}},
	}
	failures := 2
	client.PrependReactor("get", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, errors.New("API not up yet")
		}
		return false, nil, nil
	})
	c := New(Config{Client: client})
	c.discoveryBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 10}

	resources, mapper, err := c.discover(context.Background())
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	if failures != 0 {
		t.Fatalf("discovery did not go through the failing API (%d failures left)", failures)
	}
	var names []string
	for _, r := range resources {
		names = append(names, r.resource.String())
	}
	slices.Sort(names)
	if want := []string{"/v1, Resource=configmaps", "coordination.k8s.io/v1, Resource=leases"}; !slices.Equal(names, want) {
		t.Fatalf("collectable resources: got %v, want %v (no events, nothing that cannot be listed, watched and deleted)", names, want)
	}
	if _, err := mapper.RESTMapping(schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}, "v1"); err != nil {
		t.Fatalf("the mapper must map owner kinds: %v", err)
	}
}

func TestDiscoveryThatNeverAnswersIsAnError(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("get", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("API down")
	})
	c := New(Config{Client: client})
	c.discoveryBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}
	if _, _, err := c.discover(context.Background()); err == nil {
		t.Fatal("discovery that never answers must end in an error")
	}
}
