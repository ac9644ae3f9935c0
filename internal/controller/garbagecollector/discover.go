package garbagecollector

import (
	"context"
	"fmt"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
)

// ignored are resources the collector never watches, as upstream's
// default: events are many, short-lived, and never owners.
var ignored = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// collectable is one served resource the collector watches.
type collectable struct {
	resource schema.GroupVersionResource
	kind     schema.GroupKind
}

// defaultDiscoveryBackoff paces discovery retries while the API is not answering.
func defaultDiscoveryBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Cap: 30 * time.Second, Steps: math.MaxInt32}
}

// discover retries discovery until it answers or ctx ends: a collector that
// gave up at start-up would never run.
func (c *Controller) discover(ctx context.Context) (resources []collectable, mapper meta.RESTMapper, err error) {
	waitErr := wait.ExponentialBackoffWithContext(ctx, c.discoveryBackoff, func(context.Context) (bool, error) {
		resources, mapper, err = discoverCollectable(ctx, c.cfg.Client.Discovery())
		if err != nil {
			c.log.Warn("discovery failed; retrying", "err", err)
		}
		return err == nil, nil
	})
	if waitErr != nil && err != nil {
		return nil, nil, fmt.Errorf("%w (last discovery error: %w)", waitErr, err)
	}
	if waitErr != nil {
		return nil, nil, waitErr
	}
	return resources, mapper, nil
}

// discoverCollectable returns every served resource (preferred version)
// that can be listed, watched and deleted, and a mapper from owner
// references' apiVersion and kind to resources. A group version that fails
// to answer fails the whole discovery.
func discoverCollectable(ctx context.Context, client discovery.DiscoveryInterface) ([]collectable, meta.RESTMapper, error) {
	withCtx := discovery.ToDiscoveryInterfaceWithContext(client)
	groups, err := restmapper.GetAPIGroupResourcesWithContext(ctx, withCtx)
	if err != nil {
		return nil, nil, fmt.Errorf("discover API groups: %w", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	lists, err := discovery.ServerPreferredResourcesWithContext(ctx, withCtx)
	if err != nil {
		return nil, nil, fmt.Errorf("discover resources: %w", err)
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "watch", "delete"}}, lists)
	var out []collectable
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, nil, fmt.Errorf("discover resources: %w", err)
		}
		for _, r := range list.APIResources {
			gvr := gv.WithResource(r.Name)
			if ignored[gvr.GroupResource()] {
				continue
			}
			out = append(out, collectable{resource: gvr, kind: schema.GroupKind{Group: gv.Group, Kind: r.Kind}})
		}
	}
	return out, mapper, nil
}

// rediscover discovers the served resources every DiscoveryPeriod until ctx
// ends, and watches what is new and stops watching what is gone.
func (c *Controller) rediscover(ctx context.Context) {
	ticker := time.NewTicker(c.cfg.DiscoveryPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			c.resync(ctx)
		}
	}
}

// resync brings the mapper and the monitors in line with one discovery. A
// failed or empty discovery changes nothing: stopping the monitors of a
// group that failed to answer would forget live owners, and the next period
// tries again. Not safe to run concurrently with itself.
func (c *Controller) resync(ctx context.Context) {
	resources, mapper, err := discoverCollectable(ctx, c.cfg.Client.Discovery())
	switch {
	case ctx.Err() != nil:
		return // shutting down
	case err != nil:
		c.log.Warn("discovery failed; watching the same resources until the next try", "err", err)
		return
	case len(resources) == 0:
		c.log.Warn("discovery found no resources; watching the same resources until the next try")
		return
	}
	c.resolver.setMapper(mapper)
	added, removed := c.monitors.diff(resources)
	for _, resource := range removed {
		c.stopMonitor(resource)
		c.log.Info("stopped watching a resource no longer served", "resource", resource.String())
	}
	added = c.readable(ctx, added)
	if err := c.startMonitors(ctx, added); err != nil {
		c.log.Warn("cannot watch newly served resources; retrying at the next discovery", "err", err)
	}
	for _, r := range added {
		if c.monitors.has(r.resource) {
			c.log.Info("watching a newly served resource", "resource", r.resource.String())
		}
	}
}

// readable drops the resources this identity may not list, with a warning:
// an informer that can never sync would hold up the whole collector. Its
// objects are then neither collected nor seen as owners (a dependent of
// such an owner is kept, since the live read of the owner fails too).
func (c *Controller) readable(ctx context.Context, resources []collectable) []collectable {
	out := resources[:0:0]
	for _, r := range resources {
		_, err := c.cfg.Metadata.Resource(r.resource).List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsForbidden(err) {
			c.log.Warn("garbage collector may not list a served resource; not collecting it", "resource", r.resource.String(), "err", err)
			continue
		}
		out = append(out, r)
	}
	return out
}
