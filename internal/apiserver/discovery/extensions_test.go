package discovery

import (
	"net/http/httptest"
	"slices"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func widgetsVersion(version string) apidiscoveryv2.APIVersionDiscovery {
	return apidiscoveryv2.APIVersionDiscovery{Version: version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
		Resources: []apidiscoveryv2.APIResourceDiscovery{{
			Resource: "widgets", SingularResource: "widget", Scope: apidiscoveryv2.ScopeNamespace,
			ResponseKind: &metav1.GroupVersionKind{Group: "example.com", Version: version, Kind: "Widget"},
			Verbs:        []string{"get", "list", "watch", "create"}, ShortNames: []string{"wd"},
			Subresources: []apidiscoveryv2.APISubresourceDiscovery{{
				Subresource:  "scale",
				ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
				Verbs:        []string{"get", "update", "patch"},
			}},
		}}}
}

// TestExtensionGroupsJoinAndLeaveDiscovery: a group added through the
// ResourceManager interface (as apiextensions' discovery controller adds a
// CRD's) is served in both forms after the built-in groups, its versions
// in priority order, and is gone once removed; the aggregated ETag follows.
func TestExtensionGroupsJoinAndLeaveDiscovery(t *testing.T) {
	ext := NewExtensions()
	h := Handler(Default(), ext)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	etag := func() string {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/apis", nil)
		req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		h.ServeHTTP(rec, req)
		return rec.Header().Get("ETag")
	}
	before := etag()

	ext.AddGroupVersion("example.com", widgetsVersion("v1beta1"))
	ext.AddGroupVersion("example.com", widgetsVersion("v1"))
	ext.SetGroupVersionPriority(metav1.GroupVersion{Group: "example.com", Version: "v1"}, 1000, 20)
	ext.SetGroupVersionPriority(metav1.GroupVersion{Group: "example.com", Version: "v1beta1"}, 1000, 10)
	if etag() == before {
		t.Error("the aggregated ETag did not change when a group was added")
	}
	for _, legacy := range []bool{true, false} {
		client := discoveryClient(t, srv, legacy)
		groups, lists, err := client.ServerGroupsAndResources()
		if err != nil {
			t.Fatalf("legacy=%v: discovery: %v", legacy, err)
		}
		last := groups[len(groups)-1]
		var versions []string
		for _, v := range last.Versions {
			versions = append(versions, v.Version)
		}
		if last.Name != "example.com" || !slices.Equal(versions, []string{"v1", "v1beta1"}) || last.PreferredVersion.Version != "v1" {
			t.Errorf("legacy=%v: last group %s with versions %v (preferred %s), want example.com with v1 (preferred), v1beta1", legacy, last.Name, versions, last.PreferredVersion.Version)
		}
		i := slices.IndexFunc(lists, func(l *metav1.APIResourceList) bool { return l.GroupVersion == "example.com/v1" })
		if i < 0 {
			t.Errorf("legacy=%v: example.com/v1 not discovered", legacy)
			continue
		}
		var names []string
		for _, r := range lists[i].APIResources {
			names = append(names, r.Name)
			if r.Name == "widgets/scale" && (r.Group != "autoscaling" || r.Kind != "Scale") {
				t.Errorf("legacy=%v: widgets/scale = %+v, want autoscaling Scale", legacy, r)
			}
		}
		if !slices.Equal(names, []string{"widgets", "widgets/scale"}) {
			t.Errorf("legacy=%v: example.com/v1 lists %v", legacy, names)
		}
	}

	ext.RemoveGroupVersion(metav1.GroupVersion{Group: "example.com", Version: "v1beta1"})
	ext.RemoveGroup("example.com")
	for _, l := range discover(t, srv, false) {
		if l.GroupVersion == "example.com/v1" || l.GroupVersion == "example.com/v1beta1" {
			t.Errorf("%s still discovered after its group was removed", l.GroupVersion)
		}
	}
	if etag() != before {
		t.Error("the aggregated ETag differs from the one before the group was added, though the groups are the same again")
	}
}
