package apiserver

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"

	"github.com/berth/berth/internal/auth"
)

// kubeSchedulerCollections are what kube-scheduler v1.37's default profile
// and DRA manager list and watch besides pods, nodes and namespaces (see
// emptyCollections for where each comes from upstream). Listed here, not
// taken from emptyCollections, so that a collection dropped from the
// server fails the tests.
var kubeSchedulerCollections = []schema.GroupVersionResource{
	{Version: "v1", Resource: "persistentvolumes"},
	{Version: "v1", Resource: "persistentvolumeclaims"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "replicationcontrollers"},
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "csinodes"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "csidrivers"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "csistoragecapacities"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"},
	{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"},
	{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"},
	{Group: "resource.k8s.io", Version: "v1", Resource: "deviceclasses"},
	{Group: "resource.k8s.io", Version: "v1", Resource: "devicetaintrules"},
}

// storedCollections are the collections kube-scheduler watches that berth
// stores and serves writable: they must not be read-only.
var storedCollections = map[schema.GroupVersionResource]bool{
	{Version: "v1", Resource: "services"}:                                      true,
	{Version: "v1", Resource: "persistentvolumes"}:                             true,
	{Version: "v1", Resource: "persistentvolumeclaims"}:                        true,
	{Version: "v1", Resource: "replicationcontrollers"}:                        true,
	{Group: "apps", Version: "v1", Resource: "replicasets"}:                    true,
	{Group: "apps", Version: "v1", Resource: "statefulsets"}:                   true,
	{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}:         true,
	{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}:       true,
	{Group: "storage.k8s.io", Version: "v1", Resource: "csinodes"}:             true,
	{Group: "storage.k8s.io", Version: "v1", Resource: "csidrivers"}:           true,
	{Group: "storage.k8s.io", Version: "v1", Resource: "csistoragecapacities"}: true,
	{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"}:    true,
}

// TestKubeSchedulerInformersSyncOnEmptyCollections starts client-go's
// typed shared informers (protobuf) for every collection kube-scheduler
// waits on, as system:kube-scheduler under the bootstrap policy, and
// waits for all of them to sync, as kube-scheduler does before it
// schedules anything.
func TestKubeSchedulerInformersSyncOnEmptyCollections(t *testing.T) {
	t.Parallel()
	scheduler := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: auth.SchedulerUser, Groups: []string{user.AllAuthenticated}}}, true, nil
	})
	s := newTestServerWith(t, func(c *Config) {
		c.Authenticator = scheduler
		c.Authorizer = auth.NewPolicyAuthorizer(auth.BootstrapPolicy())
	})
	factory := informers.NewSharedInformerFactory(s.client, 0)
	for _, gvr := range kubeSchedulerCollections {
		if _, err := factory.ForResource(gvr); err != nil {
			t.Fatalf("informer for %s: %v", gvr, err)
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()
	synced := factory.WaitForCacheSync(ctx.Done())
	if len(synced) != len(kubeSchedulerCollections) {
		t.Fatalf("%d informers started, want %d", len(synced), len(kubeSchedulerCollections))
	}
	for typ, ok := range synced {
		if !ok {
			t.Errorf("the %s informer did not sync", typ)
		}
	}
}

func TestEmptyCollectionsInDiscoveryReadOnly(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	// client-go asks for aggregated discovery first.
	_, aggregated, err := s.client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("aggregated discovery: %v", err)
	}
	for _, gvr := range kubeSchedulerCollections {
		legacy, err := s.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			t.Fatalf("legacy discovery of %s: %v", gvr.GroupVersion(), err)
		}
		for name, lists := range map[string][]*metav1.APIResourceList{"legacy": {legacy}, "aggregated": aggregated} {
			r := findAPIResource(lists, gvr)
			if r == nil {
				t.Errorf("%s discovery lacks %s", name, gvr)
				continue
			}
			want := []string{"get", "list", "watch"}
			if storedCollections[gvr] {
				want = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
			}
			if !slices.Equal(r.Verbs, want) {
				t.Errorf("%s discovery: %s verbs %v, want %v", name, gvr, r.Verbs, want)
			}
		}
	}
	csi := findAPIResource(aggregated, storagev1.SchemeGroupVersion.WithResource("csistoragecapacities"))
	va := findAPIResource(aggregated, storagev1.SchemeGroupVersion.WithResource("volumeattachments"))
	if csi == nil || csi.Kind != "CSIStorageCapacity" || !csi.Namespaced || va == nil || va.Kind != "VolumeAttachment" || va.Namespaced {
		t.Fatalf("csistoragecapacities %+v, volumeattachments %+v: kind or scope differ from upstream", csi, va)
	}
}

func findAPIResource(lists []*metav1.APIResourceList, gvr schema.GroupVersionResource) *metav1.APIResource {
	for _, list := range lists {
		if list.GroupVersion != gvr.GroupVersion().String() {
			continue
		}
		for i := range list.APIResources {
			if list.APIResources[i].Name == gvr.Resource {
				return &list.APIResources[i]
			}
		}
	}
	return nil
}

func TestKubectlGetEmptyCollection(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	k := newKubectl(t, s)
	k.Must("", []string{"get", "deviceclasses"}, "No resources found")
	k.Must("", []string{"get", "pdb"}, "No resources found in default namespace.")
	k.Must("", []string{"get", "resourceslices", "-o", "json"}, `"kind": "List"`, `"items": []`)
	k.Must("", []string{"explain", "deviceclass"}, "DeviceClass")
	out, ok := k.Run("", nil, "get", "deviceclass", "gpu")
	if ok || !strings.Contains(out, `deviceclasses.resource.k8s.io "gpu" not found`) {
		t.Fatalf("kubectl get deviceclass gpu: %v\n%s", ok, out)
	}
	out, ok = k.Run("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec: {}\n", nil, "create", "-f", "-")
	if ok || !strings.Contains(out, "read-only and always empty") {
		t.Fatalf("kubectl create deviceclass: %v\n%s", ok, out)
	}
}

// TestEmptyCollectionsRefuseWrites sends every write verb to a namespaced
// and a cluster-scoped empty collection: each is a 405 saying why, and
// nothing is written.
func TestEmptyCollectionsRefuseWrites(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	before := storeRevision(t, s)
	claim := `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"gpu","namespace":"default"},"spec":{}}`
	class := `{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"gpu"},"spec":{}}`
	for _, target := range []struct{ collection, name, body, lacks string }{
		{"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", "gpu", claim, "dynamic resource allocation"},
		{"/apis/resource.k8s.io/v1/deviceclasses", "gpu", class, "dynamic resource allocation"},
	} {
		item := target.collection + "/" + target.name
		for _, req := range []struct{ method, path, contentType, body string }{
			{"POST", target.collection, "application/json", target.body},
			{"PUT", item, "application/json", target.body},
			{"PATCH", item, "application/merge-patch+json", `{"metadata":{"labels":{"a":"b"}}}`},
			{"PATCH", item + "?fieldManager=test", "application/apply-patch+yaml", target.body},
			{"DELETE", item, "application/json", ""},
			{"DELETE", target.collection, "application/json", ""},
		} {
			code, status := rawRequest(t, s, req.method, req.path, req.contentType, []byte(req.body))
			if code != http.StatusMethodNotAllowed || status.Reason != metav1.StatusReasonMethodNotAllowed ||
				!strings.Contains(status.Message, "read-only and always empty") || !strings.Contains(status.Message, "berth has no "+target.lacks) {
				t.Errorf("%s %s (%s): %d %+v, want 405 saying berth has no %s", req.method, req.path, req.contentType, code, status, target.lacks)
			}
		}
	}
	assertStoreUnchanged(t, s, before)
	// Services were one of these collections; berth stores them now.
	svc := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"port":80}]}}`
	if code, status := rawRequest(t, s, "POST", "/api/v1/namespaces/default/services", "application/json", []byte(svc)); code != http.StatusCreated {
		t.Errorf("POST a service: %d %+v, want 201", code, status)
	}
}

// TestEmptyCollectionReads covers what readers rely on: 404 for any name,
// an empty list at a valid revision (JSON and protobuf), exact lists and
// watches from an older revision, and a watch-list that ends its initial
// events with a bookmark and then stays open without events.
func TestEmptyCollectionReads(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	old := strconv.FormatInt(storeRevision(t, s), 10)
	if _, err := s.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "moves-the-revision"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	current := strconv.FormatInt(storeRevision(t, s), 10)
	pvcs := s.client.CoreV1().PersistentVolumeClaims("default")

	if _, err := pvcs.Get(ctx, "data", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get: %v, want NotFound", err)
	}
	list, err := pvcs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 || list.ResourceVersion != current {
		t.Fatalf("list: %v %+v, want empty at revision %s", err, list, current)
	}
	jsonList, err := s.jsonCli.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil || len(jsonList.Items) != 0 || jsonList.ResourceVersion != current {
		t.Fatalf("JSON list: %v %+v, want empty at revision %s", err, jsonList, current)
	}
	exact, err := pvcs.List(ctx, metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || exact.ResourceVersion != old {
		t.Fatalf("exact list at %s: %v %+v", old, err, exact)
	}
	// Raw: client-go would retry this 504 for ten seconds.
	future := strconv.FormatInt(storeRevision(t, s)+100, 10)
	code, status := rawRequest(t, s, "GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims?resourceVersion="+future, "", nil)
	if code != http.StatusGatewayTimeout || status.Details == nil || len(status.Details.Causes) != 1 ||
		status.Details.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge {
		t.Fatalf("list at a revision not reached: %d %+v, want 504 Too large resource version", code, status)
	}

	// A watch from an old revision is valid and ends at its timeout, having sent nothing.
	timeout := int64(1)
	w, err := pvcs.Watch(ctx, metav1.ListOptions{ResourceVersion: old, TimeoutSeconds: &timeout, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatalf("watch from %s: %v", old, err)
	}
	for ev := range w.ResultChan() {
		t.Fatalf("watch from %s sent %s %v", old, ev.Type, ev.Object)
	}

	yes := true
	wl, err := s.client.ResourceV1().DeviceClasses().Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatalf("watch-list: %v", err)
	}
	ev := nextEvent(t, wl)
	class, _ := ev.Object.(*resourcev1.DeviceClass)
	if ev.Type != watch.Bookmark || class == nil || class.Annotations[metav1.InitialEventsAnnotationKey] != "true" || class.ResourceVersion != current {
		t.Fatalf("watch-list's first event %s %+v, want the initial-events-end bookmark at %s", ev.Type, ev.Object, current)
	}
	for ev := range wl.ResultChan() {
		t.Fatalf("watch-list sent %s %v after its bookmark", ev.Type, ev.Object)
	}
}
