package discovery

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The unaggregated discovery documents, as kube-apiserver serves them to
// clients that do not ask for aggregated discovery.

func apiVersions(core group) *metav1.APIVersions {
	doc := &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions", APIVersion: "v1"},
		// No per-CIDR addresses: clients reach berth at the address they used.
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{},
	}
	for _, v := range core.versions {
		doc.Versions = append(doc.Versions, v.name)
	}
	return doc
}

func apiGroupList(groups []group) *metav1.APIGroupList {
	doc := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range groups {
		doc.Groups = append(doc.Groups, *apiGroupOf(g))
	}
	if doc.Groups == nil {
		doc.Groups = []metav1.APIGroup{}
	}
	return doc
}

func apiGroupOf(g group) *metav1.APIGroup {
	doc := &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g.name}
	for _, v := range g.versions {
		doc.Versions = append(doc.Versions, metav1.GroupVersionForDiscovery{
			GroupVersion: schema.GroupVersion{Group: g.name, Version: v.name}.String(),
			Version:      v.name,
		})
	}
	doc.PreferredVersion = doc.Versions[0]
	return doc
}

func apiResourceList(gv schema.GroupVersion, resources []Resource) *metav1.APIResourceList {
	doc := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(),
		APIResources: []metav1.APIResource{},
	}
	for _, r := range resources {
		doc.APIResources = append(doc.APIResources, metav1.APIResource{
			Name:               r.Resource,
			SingularName:       r.SingularName,
			Namespaced:         r.Namespaced,
			Kind:               r.Kind,
			Verbs:              r.Verbs,
			ShortNames:         r.ShortNames,
			Categories:         r.Categories,
			StorageVersionHash: r.storageVersionHash(),
		})
		for _, s := range r.Subresources {
			entry := metav1.APIResource{
				Name:       r.Resource + "/" + s.Name,
				Namespaced: r.Namespaced,
				Kind:       s.Kind,
				Verbs:      s.Verbs,
			}
			// Group and Version are set only when they differ from the list's.
			if s.Version != "" {
				entry.Group, entry.Version = s.Group, s.Version
			}
			doc.APIResources = append(doc.APIResources, entry)
		}
	}
	return doc
}
