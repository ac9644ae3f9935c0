package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/testkit/wait"
)

// localConfigMaps serves configmaps' metadata as a watch cache would, with
// one object that exists nowhere else, at resourceVersion 42.
func localConfigMaps(_ context.Context, gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
	if gvr != configMaps {
		return nil, fmt.Errorf("%s is not served locally", gvr)
	}
	obj := metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "local", UID: "local-uid", ResourceVersion: "42", Labels: map[string]string{"a": "b"}},
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}, Items: []metav1.PartialObjectMetadata{obj}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil {
				return nil, errors.New("streaming lists are not served here; the informer lists instead")
			}
			return watch.NewFake(), nil
		},
	}, nil
}

// runMonitor runs the informer of gvr as the graph builder runs a monitor,
// and returns the informer and the func that stops it.
func runMonitor(t *testing.T, f *monitorInformers, gvr schema.GroupVersionResource) (cache.SharedIndexInformer, func()) {
	t.Helper()
	generic, err := f.ForResource(gvr)
	if err != nil {
		t.Fatalf("ForResource(%s): %v", gvr, err)
	}
	informer := generic.Informer()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		informer.GetController().Run(stop)
	}()
	halt := func() {
		close(stop)
		<-done
	}
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			halt()
		}
	})
	wait.Until(t, 10*time.Second, "the informer of "+gvr.String()+" to sync", informer.HasSynced)
	return informer, halt
}

func TestMonitorReadsLocallyWhenServed(t *testing.T) {
	api := newServedAPI(t)
	api.create(t, widgets, "Widget", "remote")
	f := &monitorInformers{ctx: t.Context(), metadata: api.metadata, local: localConfigMaps, log: slog.New(slog.DiscardHandler)}

	local, _ := runMonitor(t, f, configMaps)
	if got := local.GetStore().ListKeys(); !slices.Equal(got, []string{"ns/local"}) {
		t.Fatalf("configmaps must be read locally: store holds %v", got)
	}
	if got := local.GetController().LastSyncResourceVersion(); got != "42" {
		t.Fatalf("the monitor must report the resourceVersion it listed at (the migrator reads it): got %q", got)
	}
	obj, _, _ := local.GetStore().GetByKey("ns/local")
	if m := obj.(*metav1.PartialObjectMetadata); m.Labels != nil {
		t.Fatalf("the monitor must keep only what the collector reads, got labels %v", m.Labels)
	}

	remote, _ := runMonitor(t, f, widgets)
	if got := remote.GetStore().ListKeys(); !slices.Equal(got, []string{"ns/remote"}) {
		t.Fatalf("widgets, not served locally, must be read through the metadata client: store holds %v", got)
	}
}

func TestMonitorInformerStopsWithItsMonitor(t *testing.T) {
	api := newServedAPI(t)
	f := &monitorInformers{ctx: t.Context(), metadata: api.metadata, log: slog.New(slog.DiscardHandler)}
	_, stopConfigMaps := runMonitor(t, f, configMaps)
	runMonitor(t, f, widgets)
	if got, want := f.running(), resourceNames(configMaps, widgets); !slices.Equal(got, want) {
		t.Fatalf("running informers: got %v, want %v", got, want)
	}
	stopConfigMaps()
	if got, want := f.running(), resourceNames(widgets); !slices.Equal(got, want) {
		t.Fatalf("a stopped monitor's informer must stop: running %v, want %v", got, want)
	}
}

func TestUnreadableResourceIsNotDiscovered(t *testing.T) {
	api := newServedAPI(t, coreResources, widgetResources)
	api.forbid(widgets, true)
	d := newReadableDiscovery(api.client.Discovery(), api.metadata, slog.New(slog.NewTextHandler(t.Output(), nil)))

	discovered := func() []string {
		t.Helper()
		lists, err := d.ServerPreferredResourcesWithContext(t.Context())
		if err != nil {
			t.Fatalf("discovery: %v", err)
		}
		var out []string
		for _, list := range lists {
			for _, r := range list.APIResources {
				out = append(out, list.GroupVersion+"/"+r.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := discovered(), []string{"v1/configmaps"}; !slices.Equal(got, want) {
		t.Fatalf("a resource the collector may not list must not be discovered: got %v, want %v", got, want)
	}
	api.forbid(widgets, false)
	if got, want := discovered(), []string{"example.com/v1/widgets", "v1/configmaps"}; !slices.Equal(got, want) {
		t.Fatalf("once the collector may list it, the resource must be discovered: got %v, want %v", got, want)
	}
}
