package garbagecollector

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// discoverCollectable returns every served resource (preferred version)
// that can be listed, watched and deleted, and a mapper from owner
// references' apiVersion and kind to resources.
func discoverCollectable(client discovery.DiscoveryInterface) ([]collectable, meta.RESTMapper, error) {
	groups, err := restmapper.GetAPIGroupResources(client)
	if err != nil {
		return nil, nil, fmt.Errorf("discover API groups: %w", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	lists, err := client.ServerPreferredResources()
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
