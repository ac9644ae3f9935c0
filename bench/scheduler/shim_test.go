package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// shimOver serves an apiShim forwarding to backend; it returns the shim's URL.
func shimOver(t *testing.T, backend http.Handler) string {
	t.Helper()
	upstream := httptest.NewServer(backend)
	t.Cleanup(upstream.Close)
	shim, err := newAPIShim(&rest.Config{Host: upstream.URL})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(shim)
	t.Cleanup(front.Close)
	return front.URL
}

func TestShimListsUnservedCollectionsEmptyAndForwardsTheRest(t *testing.T) {
	var mu sync.Mutex
	var forwarded []string
	url := shimOver(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		forwarded = append(forwarded, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
	}))
	cases := []struct {
		method, path string
		wantKind     string // "" = forwarded to berth
	}{
		{"GET", "/apis/resource.k8s.io/v1/resourceslices", "ResourceSliceList"},
		{"GET", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims", "ResourceClaimList"},
		{"GET", "/apis/storage.k8s.io/v1/csinodes", "CSINodeList"},
		{"GET", "/api/v1/pods", ""},
		{"GET", "/apis/storage.k8s.io/v1/csinodes/one", ""},   // an object, not a collection
		{"POST", "/apis/storage.k8s.io/v1/csinodes", ""},      // only reads are answered
		{"GET", "/apis/storage.k8s.io/v1/no-such-things", ""}, // unknown to the scheme
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, url+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Kind  string `json:"kind"`
			Items []any  `json:"items"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if tc.wantKind == "" {
			if resp.StatusCode != http.StatusTeapot {
				t.Errorf("%s %s: status %d, want it forwarded", tc.method, tc.path, resp.StatusCode)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK || list.Kind != tc.wantKind || list.Items == nil || len(list.Items) != 0 {
			t.Errorf("%s %s: status %d kind %q items %v, want an empty %s", tc.method, tc.path, resp.StatusCode, list.Kind, list.Items, tc.wantKind)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(forwarded) != 4 {
		t.Errorf("forwarded %v, want the 4 requests berth serves or rejects itself", forwarded)
	}
}

// client-go informers (kube-scheduler's, as it starts) sync on the shim's
// empty collections, whether they list then watch or stream a watch-list.
func TestInformersSyncOnUnservedCollections(t *testing.T) {
	url := shimOver(t, http.NotFoundHandler())
	client, err := kubernetes.NewForConfig(&rest.Config{Host: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	synced := []cache.InformerSynced{
		factory.Storage().V1().CSINodes().Informer().HasSynced,
		factory.Resource().V1().ResourceSlices().Informer().HasSynced,
		factory.Resource().V1().DeviceClasses().Informer().HasSynced,
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("informers did not sync on the shim's empty collections")
	}
	defer cancel() // stop the informers' watches before the servers close
}
