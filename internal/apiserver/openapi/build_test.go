package openapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/berth/berth/internal/apiserver/discovery"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func allResources() []discovery.Resource {
	return discovery.Default()
}

func TestBuildDescribesEveryServedGroupVersion(t *testing.T) {
	specs, err := Build(allResources(), Options{Version: "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range specs.V3 {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"api/v1", "apis/admissionregistration.k8s.io/v1", "apis/apps/v1", "apis/authentication.k8s.io/v1", "apis/authorization.k8s.io/v1", "apis/autoscaling/v1", "apis/autoscaling/v2", "apis/batch/v1", "apis/certificates.k8s.io/v1", "apis/coordination.k8s.io/v1", "apis/discovery.k8s.io/v1", "apis/events.k8s.io/v1", "apis/flowcontrol.apiserver.k8s.io/v1", "apis/networking.k8s.io/v1", "apis/node.k8s.io/v1", "apis/policy/v1", "apis/rbac.authorization.k8s.io/v1", "apis/resource.k8s.io/v1", "apis/scheduling.k8s.io/v1", "apis/storage.k8s.io/v1", "apis/storagemigration.k8s.io/v1"}
	if !slices.Equal(keys, want) {
		t.Errorf("v3 documents %v, want %v", keys, want)
	}
	for _, path := range []string{
		"/api/v1/namespaces/{namespace}/pods/{name}", "/api/v1/namespaces/{namespace}/pods/{name}/status",
		"/api/v1/namespaces/{namespace}/pods/{name}/eviction", "/api/v1/pods", "/api/v1/nodes/{name}",
		"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", "/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval",
		"/apis/node.k8s.io/v1/runtimeclasses/{name}", "/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}/status",
		"/apis/scheduling.k8s.io/v1/priorityclasses/{name}", "/apis/storage.k8s.io/v1/storageclasses/{name}",
		"/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses/{name}/status", "/apis/networking.k8s.io/v1/servicecidrs/{name}",
	} {
		if _, ok := specs.V2.Paths.Paths[path]; !ok {
			t.Errorf("v2 lacks path %s", path)
		}
	}
	if _, ok := specs.V3["api/v1"].Paths.Paths["/api/v1/namespaces/{namespace}/configmaps"]; !ok {
		t.Errorf("v3 api/v1 lacks the configmaps collection")
	}
	if _, ok := specs.V3["api/v1"].Paths.Paths["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"]; ok {
		t.Errorf("v3 api/v1 describes another group's paths")
	}
	eviction := specs.V2.Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"].Post
	if eviction == nil || eviction.ID != "createCoreV1NamespacedPodEviction" || !strings.HasSuffix(eviction.Parameters[len(eviction.Parameters)-1].Schema.Ref.String(), "io.k8s.api.policy.v1.Eviction") {
		t.Errorf("pods/eviction POST = %+v", eviction)
	}
}

// extension decodes a vendor extension to compare it as JSON.
func extension(t *testing.T, ext spec.Extensions, key string) string {
	t.Helper()
	b, err := json.Marshal(ext[key])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDefinitionsCarryTheExtensionsKubectlReads(t *testing.T) {
	specs, err := Build(discovery.Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	pod := specs.V2.Definitions["io.k8s.api.core.v1.Pod"]
	if got := extension(t, pod.Extensions, gvkExtension); got != `[{"group":"","kind":"Pod","version":"v1"}]` {
		t.Errorf("Pod %s = %s", gvkExtension, got)
	}
	lease := specs.V3["apis/coordination.k8s.io/v1"].Components.Schemas["io.k8s.api.coordination.v1.Lease"]
	if lease == nil || extension(t, lease.Extensions, gvkExtension) != `[{"group":"coordination.k8s.io","kind":"Lease","version":"v1"}]` {
		t.Errorf("v3 Lease schema = %+v", lease)
	}
	containers := specs.V2.Definitions["io.k8s.api.core.v1.PodSpec"].Properties["containers"]
	for key, want := range map[string]string{
		"x-kubernetes-patch-merge-key": `"name"`, "x-kubernetes-patch-strategy": `"merge"`,
		"x-kubernetes-list-type": `"map"`, "x-kubernetes-list-map-keys": `["name"]`,
	} {
		if got := extension(t, containers.Extensions, key); got != want {
			t.Errorf("PodSpec.containers %s = %s, want %s", key, got, want)
		}
	}
	if !slices.Contains(specs.V2.Definitions["io.k8s.api.core.v1.PodSpec"].Required, "containers") {
		t.Errorf("PodSpec does not require containers")
	}
	// DeleteOptions is served in every group, and says so.
	if got := extension(t, specs.V2.Definitions["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"].Extensions, gvkExtension); !strings.Contains(got, `"group":"coordination.k8s.io"`) {
		t.Errorf("DeleteOptions kinds = %s", got)
	}
}

func TestFieldValidationIsAdvertisedOnlyWhenAsked(t *testing.T) {
	hasParam := func(specs *Specs) (v2, v3 bool) {
		patch := specs.V2.Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}"].Patch
		for _, p := range patch.Parameters {
			v2 = v2 || p.Name == "fieldValidation"
		}
		for _, p := range specs.V3["api/v1"].Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}"].Patch.Parameters {
			v3 = v3 || p.Name == "fieldValidation"
		}
		return v2, v3
	}
	on, err := Build(discovery.Default(), Options{ServerSideFieldValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	if v2, v3 := hasParam(on); !v2 || !v3 {
		t.Errorf("fieldValidation advertised v2=%v v3=%v, want both", v2, v3)
	}
	off, err := Build(discovery.Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v2, v3 := hasParam(off); v2 || v3 {
		t.Errorf("fieldValidation advertised v2=%v v3=%v, want neither", v2, v3)
	}
}

func TestBuildRejectsWhatItCannotDescribe(t *testing.T) {
	cases := map[string]discovery.Resource{
		"unknown kind": {Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", SingularName: "widget", Verbs: []string{"get"}},
		"unknown verb": {Version: "v1", Resource: "pods", Kind: "Pod", SingularName: "pod", Verbs: []string{"frobnicate"}},
		"connect verb": {Version: "v1", Resource: "pods", Kind: "Pod", SingularName: "pod", Verbs: []string{"get"},
			Subresources: []discovery.Subresource{{Name: "exec", Connect: true, Kind: "PodExecOptions", Verbs: []string{"watch"}}}},
	}
	for name, r := range cases {
		if _, err := Build([]discovery.Resource{r}, Options{}); err == nil {
			t.Errorf("%s: Build succeeded", name)
		}
	}
}
