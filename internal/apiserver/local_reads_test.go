package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/testkit/wait"
)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// onlyReaders allows list and watch to the user "reader" and nothing else
// to anyone but the test's admin.
var onlyReaders = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "admin" || (a.GetUser().GetName() == "reader" && (a.GetVerb() == "list" || a.GetVerb() == "watch")) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "not a reader", nil
})

// localReadsOfOnePod starts a server with local reads, creates pod name on
// node n1 and returns the server, the pod and the reader's ListerWatcher of
// pods.
func localReadsOfOnePod(ctx context.Context, t *testing.T, name string) (*testServer, *corev1.Pod, cache.ListerWatcher) {
	t.Helper()
	local := NewLocalReads()
	s := newTestServerWith(t, func(c *Config) { c.LocalReads = local; c.Authorizer = onlyReaders })
	createNodes(t, s, "n1")
	pod, err := s.client.CoreV1().Pods("default").Create(ctx, localReadsPod(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := local.ListWatch(ctx, &user.DefaultInfo{Name: "reader"}, podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	return s, pod, lw
}

func TestLocalReadsFeedAnInformerFromTheWatchCache(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s, before, lw := localReadsOfOnePod(ctx, t, "before")
	// As the server's loops use it: a typed factory whose transform strips
	// managed fields, which ReadThrough must drop for these shared objects.
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informeropts.Factory()...)
	informeropts.ReadThrough(factory, &corev1.Pod{}, lw)
	pods := factory.Core().V1().Pods()
	informer := pods.Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	assertLister := func(name string, want func(*corev1.Pod) bool) {
		t.Helper()
		err := wait.PollTrue(ctx, 30*time.Second, "the informer to show pod "+name+" as wanted", func(context.Context) (bool, error) {
			p, err := pods.Lister().Pods("default").Get(name)
			return err == nil && want(p), nil
		})
		if err != nil {
			t.Fatalf("informer never showed pod %s as wanted: %v", name, err)
		}
	}
	assertLister("before", func(p *corev1.Pod) bool { return p.UID == before.UID && len(p.ManagedFields) > 0 })

	if _, err := s.client.CoreV1().Pods("default").Create(ctx, localReadsPod("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	assertLister("after", func(p *corev1.Pod) bool { return len(p.ManagedFields) > 0 && p.Spec.NodeName == "n1" })
	patch := []byte(`{"metadata":{"labels":{"changed":"yes"}}}`)
	if _, err := s.client.CoreV1().Pods("default").Patch(ctx, "after", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	assertLister("after", func(p *corev1.Pod) bool { return p.Labels["changed"] == "yes" })

	// No transform changed the cache's objects: the cache, which serves
	// everyone else, still has the managed fields.
	for _, name := range []string{"before", "after"} {
		got, err := s.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.ManagedFields) == 0 {
			t.Errorf("pod %s lost its managed fields in the watch cache", name)
		}
	}

	if err := s.client.CoreV1().Pods("default").Delete(ctx, "before", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	err := wait.PollTrue(ctx, 30*time.Second, "the informer to drop the deleted pod", func(context.Context) (bool, error) {
		_, err := pods.Lister().Pods("default").Get("before")
		return err != nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Local reads hand out the cache's objects themselves: two lists share
// every item, so an informer over them costs a pointer per object.
func TestLocalReadsShareTheCachesObjects(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	_, created, lw := localReadsOfOnePod(ctx, t, "shared")
	listed := func() *corev1.Pod {
		t.Helper()
		opts := metav1.ListOptions{ResourceVersion: created.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
		list, err := cache.ToListerWatcherWithContext(lw).ListWithContext(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil || len(items) != 1 {
			t.Fatalf("listed %d items (%v), want 1", len(items), err)
		}
		return items[0].(*corev1.Pod)
	}
	first := listed()
	if second := listed(); first != second {
		t.Error("two local lists returned different copies of one cached pod")
	}
	w, err := cache.ToListerWatcherWithContext(lw).WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case e := <-w.ResultChan():
		if e.Type != watch.Added || e.Object != runtime.Object(first) {
			t.Errorf("watch sent %s of a copy (%p), not the cached pod (%p)", e.Type, e.Object, first)
		}
	case <-ctx.Done():
		t.Fatal("watch sent nothing")
	}
}

func TestLocalReadsOnlyForUsersWhoMayListAndWatch(t *testing.T) {
	t.Parallel()
	local := NewLocalReads()
	newTestServerWith(t, func(c *Config) { c.LocalReads = local; c.Authorizer = onlyReaders })
	ctx := testContext(t)
	if _, err := local.ListWatch(ctx, &user.DefaultInfo{Name: "someone"}, podsGVR); err == nil || !strings.Contains(err.Error(), "may not list pods") {
		t.Errorf("a user who may not list pods got local reads: %v", err)
	}
	unserved := corev1.SchemeGroupVersion.WithResource("widgets")
	if _, err := local.ListWatch(ctx, &user.DefaultInfo{Name: "reader"}, unserved); err == nil {
		t.Error("local reads of an unserved resource")
	}
}

func localReadsPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func TestLocalMetadataReadsAreMetadataOnlyBookmarksToo(t *testing.T) {
	t.Parallel()
	s := newTestServerWith(t, func(c *Config) { c.Authorizer = onlyReaders })
	ctx := testContext(t)
	createNodes(t, s, "n1")
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, localReadsPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lw, err := s.local.MetadataListWatch(ctx, &user.DefaultInfo{Name: "reader"}, podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	list, err := lw.(cache.ListerWithContext).ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items, err := meta.ExtractList(list)
	if err != nil || len(items) != 1 {
		t.Fatalf("list: %+v (%v)", list, err)
	}
	if item, ok := items[0].(*metav1.PartialObjectMetadata); !ok || item.Name != "p" || item.Kind != "PartialObjectMetadata" || item.ResourceVersion == "" {
		t.Fatalf("list item: %+v", items[0])
	}
	// A watch-list, as client-go's reflector starts one: the initial
	// events end with a bookmark, which must be of the informer's type.
	yes := true
	w, err := lw.(cache.WatcherWithContext).WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range []watch.EventType{watch.Added, watch.Bookmark} {
		select {
		case e := <-w.ResultChan():
			m, ok := e.Object.(*metav1.PartialObjectMetadata)
			if e.Type != want || !ok {
				t.Fatalf("got %s of %T, want %s of PartialObjectMetadata", e.Type, e.Object, want)
			}
			if e.Type == watch.Bookmark && m.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
				t.Fatalf("bookmark without the end of initial events: %+v", m)
			}
			if e.Type == watch.Added && (m.Name != "p" || m.ManagedFields == nil) {
				t.Fatalf("added: %+v", m)
			}
		case <-ctx.Done():
			t.Fatal("watch sent too little")
		}
	}
}
