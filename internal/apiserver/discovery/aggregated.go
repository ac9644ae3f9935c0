package discovery

import (
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// aggregatedList is the apidiscovery.k8s.io/v2 document kube-apiserver
// serves at /api (core group only) or /apis (every other group) to clients
// that ask for it: all groups, versions and resources in one response.
func aggregatedList(groups []group) *apidiscoveryv2.APIGroupDiscoveryList {
	doc := &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: apidiscoveryv2.SchemeGroupVersion.String()},
		Items:    []apidiscoveryv2.APIGroupDiscovery{},
	}
	for _, g := range groups {
		item := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.name}}
		for _, v := range g.versions {
			vd := apidiscoveryv2.APIVersionDiscovery{Version: v.name, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			for _, r := range v.resources {
				vd.Resources = append(vd.Resources, aggregatedResource(r))
			}
			item.Versions = append(item.Versions, vd)
		}
		doc.Items = append(doc.Items, item)
	}
	return doc
}

func aggregatedResource(r Resource) apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if r.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	gvk := r.GroupVersionKind()
	d := apidiscoveryv2.APIResourceDiscovery{
		Resource:         r.Resource,
		ResponseKind:     &metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Scope:            scope,
		SingularResource: r.SingularName,
		Verbs:            r.Verbs,
		ShortNames:       r.ShortNames,
		Categories:       r.Categories,
	}
	for _, s := range r.Subresources {
		sk := s.GroupVersionKind(r)
		d.Subresources = append(d.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource:  s.Name,
			ResponseKind: &metav1.GroupVersionKind{Group: sk.Group, Version: sk.Version, Kind: sk.Kind},
			Verbs:        s.Verbs,
		})
	}
	return d
}
