package apiserver

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"

	"github.com/berth/berth/internal/auth"
	"github.com/berth/berth/internal/auth/rbac"
)

// kubeSchedulerCollections are what kube-scheduler v1.37's default profile
// and DRA manager list and watch besides pods, nodes and namespaces
// (pkg/scheduler: the plugins' informers, scheduler.go's DRA set-up and
// the DRA manager's listers). Listed here, not taken from the served
// kinds, so that a collection dropped from the server fails the test.
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

// TestKubeSchedulerInformersSync starts client-go's
// typed shared informers (protobuf) for every collection kube-scheduler
// waits on, as system:kube-scheduler under upstream's role, and
// waits for all of them to sync, as kube-scheduler does before it
// schedules anything.
func TestKubeSchedulerInformersSync(t *testing.T) {
	t.Parallel()
	scheduler := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: auth.SchedulerUser, Groups: []string{user.AllAuthenticated}}}, true, nil
	})
	s := newTestServerWith(t, func(c *Config) {
		c.Authenticator = scheduler
		c.Authorizer = auth.NewPolicyAuthorizer(append(auth.BootstrapPolicy(), rbac.ComponentBindings()...))
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
