package garbagecollector

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	upstream "k8s.io/kubernetes/pkg/controller/garbagecollector"
)

// readableDiscovery is the discovery upstream's Sync reads the collectable
// resources from, less those the collector may not list. Upstream would
// keep a monitor that never syncs for such a resource, and then hold its
// workers for the initial sync timeout and every later sync for a period.
// Objects of a skipped resource are neither collected nor seen as owners
// (a dependent of such an owner is kept: the live read of the owner fails too).
//
// It embeds both discovery interfaces so that Sync, which prefers the one
// with a context, reaches the filter either way; only the preferred
// resources are filtered, as Sync reads nothing else.
type readableDiscovery struct {
	discovery.ServerResourcesInterface
	discovery.ServerResourcesInterfaceWithContext
	// discovery computes the preferred resources from the groups, as
	// DiscoveryClient's own method does (a fake's returns nothing).
	discovery discovery.DiscoveryInterfaceWithContext
	metadata  metadata.Interface
	log       *slog.Logger

	mu sync.Mutex
	// allowed caches the resources a list was not forbidden for; forbidden
	// ones are asked again at each discovery, as roles change.
	allowed map[schema.GroupVersionResource]bool
}

func newReadableDiscovery(d discovery.DiscoveryInterface, meta metadata.Interface, log *slog.Logger) *readableDiscovery {
	withCtx := discovery.ToDiscoveryInterfaceWithContext(d)
	return &readableDiscovery{
		ServerResourcesInterface:            d,
		ServerResourcesInterfaceWithContext: withCtx,
		discovery:                           withCtx,
		metadata:                            meta, log: log,
		allowed: map[schema.GroupVersionResource]bool{},
	}
}

// ServerPreferredResources is ServerPreferredResourcesWithContext without a deadline.
func (d *readableDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return d.ServerPreferredResourcesWithContext(context.Background())
}

// ServerPreferredResourcesWithContext is discovery's answer, error included
// (a partial failure keeps the failed groups' monitors upstream), without
// the collectable resources this identity may not list.
func (d *readableDiscovery) ServerPreferredResourcesWithContext(ctx context.Context) ([]*metav1.APIResourceList, error) {
	lists, err := discovery.ServerPreferredResourcesWithContext(ctx, d.discovery)
	out := make([]*metav1.APIResourceList, 0, len(lists))
	for _, list := range lists {
		gv, parseErr := schema.ParseGroupVersion(list.GroupVersion)
		if parseErr != nil {
			out = append(out, list) // upstream logs and skips it
			continue
		}
		kept := *list
		kept.APIResources = slices.DeleteFunc(slices.Clone(list.APIResources), func(r metav1.APIResource) bool {
			return collectable(gv, &r) && !d.readable(ctx, gv.WithResource(r.Name))
		})
		out = append(out, &kept)
	}
	return out, err
}

// deletable are the verbs upstream's GetDeletableResources requires.
var deletable = discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}

// collectable is whether the collector would watch r, by upstream's own
// rules: deletable, and not among its ignored resources (events).
func collectable(gv schema.GroupVersion, r *metav1.APIResource) bool {
	if _, ignored := upstream.DefaultIgnoredResources()[gv.WithResource(r.Name).GroupResource()]; ignored {
		return false
	}
	return deletable.Match(gv.String(), r)
}

// readable is whether a list of gvr is not forbidden. Other errors count as
// readable, uncached: the informer retries them.
func (d *readableDiscovery) readable(ctx context.Context, gvr schema.GroupVersionResource) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.allowed[gvr] {
		return true
	}
	_, err := d.metadata.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if apierrors.IsForbidden(err) {
		d.log.Warn("garbage collector may not list a served resource; not collecting it", "resource", gvr.String(), "err", err)
		return false
	}
	if err == nil {
		d.allowed[gvr] = true
	}
	return true
}
