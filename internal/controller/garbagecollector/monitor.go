package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// monitor is the informer of one resource, which feeds its objects into the
// graph. Each stops on its own: resources come and go with
// CustomResourceDefinitions while the collector runs.
type monitor struct {
	resource collectable
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	// done is closed once the informer, and so its event handler, has stopped.
	done chan struct{}
}

// halt stops the informer and waits for it.
func (m *monitor) halt() {
	m.stop()
	<-m.done
}

// monitorSet holds the running monitors by resource. Run and the
// rediscovery goroutine it owns change it; the mutex lets tests look in.
type monitorSet struct {
	mu      sync.Mutex
	running map[schema.GroupVersionResource]*monitor
}

func (s *monitorSet) add(m *monitor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		s.running = map[schema.GroupVersionResource]*monitor{}
	}
	s.running[m.resource.resource] = m
}

func (s *monitorSet) has(resource schema.GroupVersionResource) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.running[resource]
	return ok
}

// take removes the monitor of resource from the set and returns it (nil
// when there is none); the caller halts it.
func (s *monitorSet) take(resource schema.GroupVersionResource) *monitor {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.running[resource]
	delete(s.running, resource)
	return m
}

// takeAll empties the set and returns what it held.
func (s *monitorSet) takeAll() []*monitor {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*monitor, 0, len(s.running))
	for _, m := range s.running {
		out = append(out, m)
	}
	clear(s.running)
	return out
}

// diff compares the running monitors with the served resources: added are
// served and not watched, removed are watched and no longer served.
func (s *monitorSet) diff(served []collectable) (added []collectable, removed []schema.GroupVersionResource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := make(map[schema.GroupVersionResource]bool, len(served))
	for _, r := range served {
		keep[r.resource] = true
		if s.running[r.resource] == nil {
			added = append(added, r)
		}
	}
	for resource := range s.running {
		if !keep[resource] {
			removed = append(removed, resource)
		}
	}
	return added, removed
}

// unsynced names the monitors whose informer has not listed yet.
func (s *monitorSet) unsynced() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for resource, m := range s.running {
		if !m.informer.HasSynced() {
			out = append(out, resource.String())
		}
	}
	slices.Sort(out)
	return out
}

// synced are the running informers' HasSynced.
func (s *monitorSet) synced() []cache.InformerSynced {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]cache.InformerSynced, 0, len(s.running))
	for _, m := range s.running {
		out = append(out, m.informer.HasSynced)
	}
	return out
}

// startMonitors starts a monitor for each of resources not watched yet. A
// resource that cannot be watched is skipped and named in the error.
func (c *Controller) startMonitors(ctx context.Context, resources []collectable) error {
	var errs []error
	for _, r := range resources {
		if c.monitors.has(r.resource) {
			continue
		}
		if err := c.startMonitor(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// startMonitor runs an informer of r until its monitor is halted or ctx ends.
func (c *Controller) startMonitor(ctx context.Context, r collectable) error {
	ctx, stop := context.WithCancel(ctx)
	informer, err := c.informer(ctx, r)
	if err != nil {
		stop()
		return fmt.Errorf("watch %s: %w", r.resource, err)
	}
	m := &monitor{resource: r, informer: informer, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		informer.RunWithContext(ctx)
	}()
	c.monitors.add(m)
	return nil
}

// stopMonitor halts the monitor of resource and forgets its objects: with
// no informer left to report their deletion, the graph would otherwise hold
// them as live owners for good. Their dependents and owners are queued, to
// be judged by live reads.
func (c *Controller) stopMonitor(resource schema.GroupVersionResource) {
	m := c.monitors.take(resource)
	if m == nil {
		return
	}
	m.halt()
	c.enqueue(c.graph.removeResource(resource))
}

// stopMonitors halts every monitor, all at once, and waits for them.
func (c *Controller) stopMonitors() {
	all := c.monitors.takeAll()
	for _, m := range all {
		m.stop()
	}
	for _, m := range all {
		<-m.done
	}
}

// waitForMonitors waits until every running informer has listed once, so
// that workers judge owners against a full graph, not against live reads
// of every owner.
func (c *Controller) waitForMonitors(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.monitors.synced()...) {
		return fmt.Errorf("informers of %v did not sync: %w", c.monitors.unsynced(), ctx.Err())
	}
	return nil
}

// informer is a metadata informer of r feeding the graph, not yet running:
// through LocalMetadata when it serves r, else through Metadata.
func (c *Controller) informer(ctx context.Context, r collectable) (cache.SharedIndexInformer, error) {
	informer := c.localInformer(ctx, r.resource)
	if informer == nil {
		informer = metadatainformer.NewFilteredMetadataInformer(c.cfg.Metadata, r.resource, metav1.NamespaceAll, 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	}
	if err := informer.SetTransform(keepCollectionMetadata); err != nil {
		return nil, err
	}
	if _, err := informer.AddEventHandler(c.handler(r)); err != nil {
		return nil, err
	}
	return informer, nil
}

// localInformer is a metadata informer of gvr through LocalMetadata, or nil
// when there is none for it.
func (c *Controller) localInformer(ctx context.Context, gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	if c.cfg.LocalMetadata == nil {
		return nil
	}
	lw, err := c.cfg.LocalMetadata(ctx, gvr)
	if err != nil {
		c.log.Debug("watching through the API", "resource", gvr, "reason", err)
		return nil
	}
	return cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}
