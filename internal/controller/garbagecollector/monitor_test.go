package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/berth/berth/internal/testkit/wait"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgets    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

	coreResources = &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"get", "list", "watch", "delete"}},
	}}
	// widgetResources stand for a CustomResourceDefinition's resource.
	widgetResources = &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: []string{"get", "list", "watch", "delete", "patch"}},
	}}
)

// servedAPI is a fake API server whose served resources a test changes
// while the collector runs, and whose objects the collector watches and
// deletes through a fake metadata client.
type servedAPI struct {
	client   *fake.Clientset
	metadata *metadatafake.FakeMetadataClient

	mu      sync.Mutex
	served  []*metav1.APIResourceList
	failure error
	// failed counts the resource discoveries failed with failure.
	failed int
	// forbidden are the resources a list of is forbidden.
	forbidden map[schema.GroupVersionResource]bool
}

func newServedAPI(t *testing.T, served ...*metav1.APIResourceList) *servedAPI {
	t.Helper()
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	api := &servedAPI{client: fake.NewClientset(), metadata: metadatafake.NewSimpleMetadataClient(scheme), served: served,
		forbidden: map[schema.GroupVersionResource]bool{}}
	// Fake discovery reads Resources unlocked. The list of groups, which
	// every discovery asks for first and on its own, swaps them in, so no
	// read runs alongside the write.
	api.client.PrependReactor("get", "group", func(clienttesting.Action) (bool, runtime.Object, error) {
		api.mu.Lock()
		defer api.mu.Unlock()
		api.client.Resources = api.served
		return false, nil, nil
	})
	// A failure of the group versions' resources, after the groups
	// answered, is a partial discovery failure, as of an aggregated API
	// that is down.
	api.client.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		api.mu.Lock()
		defer api.mu.Unlock()
		if api.failure != nil {
			api.failed++
		}
		return api.failure != nil, nil, api.failure
	})
	api.metadata.PrependReactor("list", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		api.mu.Lock()
		defer api.mu.Unlock()
		if gvr := action.GetResource(); api.forbidden[gvr] {
			return true, nil, apierrors.NewForbidden(gvr.GroupResource(), "", errors.New("no role allows it"))
		}
		return false, nil, nil
	})
	return api
}

func (api *servedAPI) serve(lists ...*metav1.APIResourceList) {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.served = lists
}

func (api *servedAPI) failResources(err error) {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.failure = err
}

// forbid makes lists of resource forbidden, or allowed again.
func (api *servedAPI) forbid(resource schema.GroupVersionResource, forbidden bool) {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.forbidden[resource] = forbidden
}

func (api *servedAPI) failedDiscoveries() int {
	api.mu.Lock()
	defer api.mu.Unlock()
	return api.failed
}

// create adds an object of resource with the given owner references.
func (api *servedAPI) create(t *testing.T, resource schema.GroupVersionResource, kind, name string, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	t.Helper()
	obj := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: resource.GroupVersion().String(), Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(resource.Resource + "-" + name), OwnerReferences: owners},
	}
	if err := api.metadata.Tracker().Create(resource, obj, "ns"); err != nil {
		t.Fatalf("create %s %s: %v", resource.Resource, name, err)
	}
	return obj
}

func resourceNames(resources ...schema.GroupVersionResource) []string {
	var out []string
	for _, r := range resources {
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}

// newCollector builds a collector of api that rediscovers every 10ms.
func newCollector(t *testing.T, api *servedAPI) *Controller {
	t.Helper()
	c, err := New(t.Context(), Config{Client: api.client, Metadata: api.metadata, DiscoveryPeriod: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// watchingOnly waits until c's running informers are those of resources.
func watchingOnly(t *testing.T, c *Controller, what string, resources ...schema.GroupVersionResource) {
	t.Helper()
	want := resourceNames(resources...)
	wait.UntilNil(t, 10*time.Second, what, func() error {
		if got := c.informers.running(); !slices.Equal(got, want) {
			return fmt.Errorf("informers running for %v, want %v", got, want)
		}
		for _, r := range resources {
			if !c.GraphBuilder().IsResourceSynced(r) {
				return fmt.Errorf("the monitor of %s has not synced", r)
			}
		}
		return nil
	})
}

// runCollector runs c until the test ends.
func runCollector(t *testing.T, c *Controller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("timed out after 10s waiting for Run to return once its context ended")
		}
	})
}

func configMapRef(name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: types.UID("configmaps-" + name)}
}

func TestRediscoveryWatchesNewResourcesAndStopsRemovedOnes(t *testing.T) {
	api := newServedAPI(t, coreResources)
	api.create(t, configMaps, "ConfigMap", "kept")
	orphan := api.create(t, widgets, "Widget", "orphan", configMapRef("gone"))
	owned := api.create(t, widgets, "Widget", "owned", configMapRef("kept"))
	c := newCollector(t, api)
	runCollector(t, c)
	watchingOnly(t, c, "the collector to watch configmaps only", configMaps)

	api.serve(coreResources, widgetResources)
	wait.UntilTrue(t, 10*time.Second, "the widget whose owner ConfigMap does not exist to be collected", func(ctx context.Context) (bool, error) {
		_, err := api.metadata.Resource(widgets).Namespace("ns").Get(ctx, orphan.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	wait.Until(t, 10*time.Second, "the widgets monitor to put the owned widget in the graph", func() bool {
		return c.gc.GraphHasUID(owned.UID)
	})
	if _, err := api.metadata.Resource(widgets).Namespace("ns").Get(t.Context(), owned.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the widget whose owner lives must stay: %v", err)
	}

	// The informer itself stops, not only the graph builder's monitor.
	api.serve(coreResources)
	watchingOnly(t, c, "the widgets informer to stop", configMaps)
}

func TestFailedRediscoveryKeepsTheMonitors(t *testing.T) {
	api := newServedAPI(t, coreResources, widgetResources)
	c := newCollector(t, api)
	runCollector(t, c)
	watchingOnly(t, c, "the collector to watch configmaps and widgets", configMaps, widgets)

	api.serve(coreResources)
	api.failResources(errors.New("the aggregated API is unavailable"))
	if _, err := c.discovery.ServerPreferredResourcesWithContext(t.Context()); err == nil {
		t.Fatal("discovery must fail while group versions do not answer")
	} else if _, partial := discovery.GroupDiscoveryFailedErrorGroups(err); !partial {
		t.Fatalf("want a partial discovery failure, got %v", err)
	}
	failed := api.failedDiscoveries()
	wait.Until(t, 10*time.Second, "five more failed group version lookups (the collector rediscovers every 10ms)", func() bool {
		return api.failedDiscoveries() >= failed+5
	})
	if got, want := c.informers.running(), resourceNames(configMaps, widgets); !slices.Equal(got, want) {
		t.Fatalf("a failed discovery must keep the monitors: informers running for %v, want %v", got, want)
	}

	api.failResources(nil)
	watchingOnly(t, c, "the widgets informer to stop once discovery answers again", configMaps)
}
