package garbagecollector

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// monitorInformers is the informer factory upstream's graph builder asks
// for each resource's informer (informerfactory.InformerFactory). It is
// berth's for two reasons:
//   - it reads a resource's metadata from berth server's watch cache
//     (LocalMetadata) when it serves the resource, and through the metadata
//     client otherwise;
//   - each informer it returns is new and runs when the graph builder runs
//     its monitor, until the monitor stops. A shared informer's
//     GetController has a Run that does nothing, so a monitor stopped because
//     its resource is no longer served would leave the informer running.
//
// The informers keep only what the collector reads (keepCollectionMetadata).
type monitorInformers struct {
	// ctx is the collector's: LocalMetadata checks authorization with it.
	ctx      context.Context
	metadata metadata.Interface
	local    func(ctx context.Context, gvr schema.GroupVersionResource) (cache.ListerWatcher, error)
	log      *slog.Logger

	mu sync.Mutex
	// active counts the running informers by resource (a test hook).
	active map[schema.GroupVersionResource]int
}

// ForResource returns a new informer of gvr, not yet running. It never
// fails: one error would stop the graph builder from starting any monitor
// in that round of discovery.
func (f *monitorInformers) ForResource(gvr schema.GroupVersionResource) (informers.GenericInformer, error) {
	informer := f.localInformer(gvr)
	if informer == nil {
		informer = metadatainformer.NewFilteredMetadataInformer(f.metadata, gvr, metav1.NamespaceAll, 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	}
	// A new informer has not started, so the transform is always accepted.
	_ = informer.SetTransform(keepCollectionMetadata)
	own := &monitorInformer{SharedIndexInformer: informer, gvr: gvr, factory: f}
	return genericInformer{informer: own, lister: cache.NewGenericLister(informer.GetIndexer(), gvr.GroupResource())}, nil
}

// Start does nothing: each informer runs when its monitor does.
func (f *monitorInformers) Start(<-chan struct{}) {}

// localInformer is an informer of gvr through LocalMetadata, or nil when
// there is none for it.
func (f *monitorInformers) localInformer(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	if f.local == nil {
		return nil
	}
	lw, err := f.local(f.ctx, gvr)
	if err != nil {
		f.log.Debug("watching through the API", "resource", gvr.String(), "reason", err)
		return nil
	}
	return cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// running names the resources whose informer runs, sorted.
func (f *monitorInformers) running() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for gvr, n := range f.active {
		if n > 0 {
			out = append(out, gvr.String())
		}
	}
	slices.Sort(out)
	return out
}

// track counts one more running informer of gvr; the returned func counts it out.
func (f *monitorInformers) track(gvr schema.GroupVersionResource) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == nil {
		f.active = map[schema.GroupVersionResource]int{}
	}
	f.active[gvr]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.active[gvr]--
	}
}

// monitorInformer is its own controller: the graph builder runs a monitor
// by GetController().Run(stop), which here runs the informer until stop.
type monitorInformer struct {
	cache.SharedIndexInformer
	gvr     schema.GroupVersionResource
	factory *monitorInformers
}

func (i *monitorInformer) GetController() cache.Controller { return i }

func (i *monitorInformer) Run(stop <-chan struct{}) {
	defer i.factory.track(i.gvr)()
	i.SharedIndexInformer.Run(stop)
}

func (i *monitorInformer) RunWithContext(ctx context.Context) {
	defer i.factory.track(i.gvr)()
	i.SharedIndexInformer.RunWithContext(ctx)
}

// genericInformer pairs an informer with its lister (informers.GenericInformer).
type genericInformer struct {
	informer cache.SharedIndexInformer
	lister   cache.GenericLister
}

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.informer }
func (g genericInformer) Lister() cache.GenericLister         { return g.lister }
