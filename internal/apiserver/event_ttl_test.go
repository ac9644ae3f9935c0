package apiserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Events live for EventTTL after their last write, in both APIs, as
// kube-apiserver's do; nothing else expires. Like kube-apiserver's, they
// are read from the store, not a watch cache: a watcher sees them expire.
func TestEventsExpireAfterTheirTTL(t *testing.T) {
	t.Parallel()
	var cached []string
	s := newTestServerWith(t, func(c *Config) {
		c.EventTTL = 2 * time.Second
		caches := watchCacheReaders(nil)
		c.newReader = func(ctx context.Context, spec readerSpec) (collectionReader, error) {
			cached = append(cached, spec.Resource.String())
			return caches(ctx, spec)
		}
	})
	ctx := testContext(t)
	if !slices.Contains(cached, "pods") || slices.Contains(cached, "events") || slices.Contains(cached, "events.events.k8s.io") {
		t.Fatalf("watch caches for %v: want pods', not events'", cached)
	}
	w, err := s.client.EventsV1().Events("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	core := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "core", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"},
		Reason:         "Tested", Message: "m", Type: corev1.EventTypeNormal,
	}
	if _, err := s.client.CoreV1().Events("default").Create(ctx, core, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	newer := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "newer", Namespace: "default"},
		EventTime:  metav1.NowMicro(), ReportingController: "berth.test/c", ReportingInstance: "i",
		Action: "Test", Reason: "Tested", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"},
	}
	if _, err := s.client.EventsV1().Events("default").Create(ctx, newer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An update (a series count, say) writes the event again: it too expires.
	got, err := s.client.CoreV1().Events("default").Get(ctx, "core", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Count = 2
	if _, err := s.client.CoreV1().Events("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var left int
	err = wait.PollTrue(ctx, 40*time.Second, "the events to expire", func(ctx context.Context) (bool, error) {
		list, err := s.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		left = len(list.Items)
		return left == 0, nil
	})
	if err != nil {
		t.Fatalf("%d events still listed: %v", left, err)
	}
	if _, err := s.client.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("a config map expired with the events: %v", err)
	}
	deleted := map[string]bool{}
	for len(deleted) < 2 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed; saw deleted %v", deleted)
			}
			if ev.Type == watch.Deleted {
				deleted[ev.Object.(*eventsv1.Event).Name] = true
			}
		case <-ctx.Done():
			t.Fatalf("the watch saw only %v expire", deleted)
		}
	}
}
