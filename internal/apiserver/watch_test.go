package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// nextEvent waits for the next watch event (bounded only so a broken
// server fails the test instead of hanging it).
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed early")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatalf("no watch event")
	}
	return watch.Event{}
}

func boundPod(name, node string) *corev1.Pod {
	p := testPod(name)
	p.Spec.NodeName = node
	return p
}

func TestWatchFromResourceVersionAndFieldSelector(t *testing.T) {
	t.Parallel()
	forEachReader(t, func(t *testing.T, configure func(*Config)) {
		testWatchFromResourceVersionAndFieldSelector(t, newTestServerWith(t, configure))
	})
}

func testWatchFromResourceVersionAndFieldSelector(t *testing.T, s *testServer) {
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")
	createNodes(t, s, "node-a", "node-b")
	first, err := pods.Create(ctx, boundPod("a1", "node-a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Watch node-a's pods from just after a1's creation: history replays.
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "node-a").String()})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	if _, err := pods.Create(ctx, boundPod("b1", "node-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, boundPod("a2", "node-a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	if ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != "a2" {
		t.Fatalf("first event = %s %v, want ADDED a2 (b1 is another node's)", ev.Type, ev.Object)
	}
	if err := pods.Delete(ctx, "a1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	ev = nextEvent(t, w)
	if ev.Type != watch.Deleted || ev.Object.(*corev1.Pod).Name != "a1" {
		t.Fatalf("second event = %s %v, want DELETED a1", ev.Type, ev.Object)
	}
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-b"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "b1" {
		t.Fatalf("list spec.nodeName=node-b: %v %v", err, list)
	}
	if _, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=x"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("unsupported field selector: %v, want 400", err)
	}
}

// TestWatchFromForgottenRevisionIsGone watches from a revision older than
// what the reader can replay: beyond the watch cache's history, or (reading
// the store directly) compacted away.
func TestWatchFromForgottenRevisionIsGone(t *testing.T) {
	t.Parallel()
	forEachReader(t, func(t *testing.T, configure func(*Config)) {
		testWatchFromForgottenRevisionIsGone(t, newTestServerWith(t, func(c *Config) {
			configure(c)
			c.WatchHistorySize = 2
		}))
	})
}

func testWatchFromForgottenRevisionIsGone(t *testing.T, s *testServer) {
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	old, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.store.Compact(ctx, storeRevision(t, s)); err != nil {
		t.Fatalf("compact: %v", err)
	}
	// As from kube-apiserver, the watch is accepted and fails in its
	// stream: a client resuming its watch (client-go's RetryWatcher)
	// re-lists on that ERROR event but retries an error answer forever.
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion})
	if err != nil {
		t.Fatalf("watch from a forgotten revision answered %v; want 200 and an ERROR event", err)
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	status, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || status.Code != 410 {
		t.Fatalf("event = %s %#v, want ERROR with a 410 Status", ev.Type, ev.Object)
	}
}

// TestQuietWatchResumesAfterABurst resumes a selective watch that saw
// nothing while more events than the history's floor went by: its
// resourceVersion is still within the last 75 seconds, which the watch
// cache keeps however many events that is, as kube-apiserver's does.
func TestQuietWatchResumesAfterABurst(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	quiet, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Labels: map[string]string{"quiet": "yes"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1100 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("busy-", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	quiet.Data = map[string]string{"k": "v"}
	updated, err := cms.Update(ctx, quiet, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "quiet=yes", ResourceVersion: quiet.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	if cm, ok := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Modified || !ok || cm.ResourceVersion != updated.ResourceVersion {
		t.Fatalf("resumed watch: %s %#v; want the update at %s", ev.Type, ev.Object, updated.ResourceVersion)
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	forEachReader(t, func(t *testing.T, configure func(*Config)) { testPagination(t, newTestServerWith(t, configure)) })
}

func testPagination(t *testing.T, s *testServer) {
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	for i := 0; i < 7; i++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := metav1.ListOptions{Limit: 3}
	pages := 0
	var firstRV string
	for {
		page, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatalf("list page %d: %v", pages, err)
		}
		pages++
		if firstRV == "" {
			firstRV = page.ResourceVersion
		}
		for _, cm := range page.Items {
			names = append(names, cm.Name)
		}
		if len(page.Items) > 3 {
			t.Fatalf("page of %d items, limit 3", len(page.Items))
		}
		if page.Continue == "" {
			break
		}
		if pages == 1 {
			// A write between pages does not show: the list is a snapshot.
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-late"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		opts.Continue = page.Continue
	}
	if pages != 3 || len(names) != 7 || names[0] != "cm-0" || names[6] != "cm-6" {
		t.Fatalf("paged %d pages %v, want 3 pages of cm-0..cm-6", pages, names)
	}
	exact, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: firstRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || len(exact.Items) != 7 {
		t.Fatalf("exact list at %s: %v (%d items), want the 7 of then", firstRV, err, len(exact.Items))
	}
}

// TestInformerWatchList runs a client-go informer (protobuf streams)
// against the server. client-go v0.37 starts informers with a watch-list
// (WatchListClient is on by default) and falls back to list+watch if the
// server fails it: the request metrics show no LIST was needed.
func TestInformerWatchList(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")
	createNodes(t, s, "n1")
	if _, err := pods.Create(ctx, boundPod("before", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace("default"))
	informer := factory.Core().V1().Pods().Informer()
	seen := make(chan string, 10)
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { seen <- obj.(*corev1.Pod).Name }})
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if _, err := pods.Create(ctx, boundPod("after", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case name := <-seen:
			got[name] = true
		case <-syncCtx.Done():
			t.Fatalf("informer saw %v, want before and after", got)
		}
	}
	_, _, metrics := getWithAccept(t, s, "/metrics", "")
	if strings.Contains(string(metrics), `resource="pods",subresource="",verb="list"`) {
		t.Fatalf("the informer fell back to LIST (watch-list failed):\n%s", metrics)
	}
}

func TestWatchListSendsInitialEventsThenBookmark(t *testing.T) {
	t.Parallel()
	forEachReader(t, func(t *testing.T, configure func(*Config)) {
		testWatchListSendsInitialEventsThenBookmark(t, newTestServerWith(t, configure))
	})
}

func testWatchListSendsInitialEventsThenBookmark(t *testing.T, s *testServer) {
	ctx := testContext(t)
	cms := s.client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	yes := true
	w, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatalf("watch-list: %v", err)
	}
	defer w.Stop()
	if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "one" {
		t.Fatalf("first event %s %v, want ADDED one", ev.Type, ev.Object)
	}
	ev := nextEvent(t, w)
	cm, _ := ev.Object.(*corev1.ConfigMap)
	if ev.Type != watch.Bookmark || cm == nil || cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("second event %s %v, want the initial-events-end bookmark", ev.Type, ev.Object)
	}
	if rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64); err != nil || rv <= 0 {
		t.Fatalf("bookmark resourceVersion %q", cm.ResourceVersion)
	}
}

// forEachReader runs a collection test against the watch cache (the
// default) and against the direct store reader.
func forEachReader(t *testing.T, test func(t *testing.T, configure func(*Config))) {
	t.Run("watchcache", func(t *testing.T) { test(t, func(*Config) {}) })
	t.Run("store", func(t *testing.T) { test(t, func(c *Config) { c.newReader = newStoreReader }) })
}
