package watchcache

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berth/berth/internal/store"
)

// TestDeleteWithoutPreviousValueUsesTheCachedObject: etcd may deliver a
// delete without its previous value; the object must still leave the cache
// and watchers must get DELETED at the delete's revision.
func TestDeleteWithoutPreviousValueUsesTheCachedObject(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newStorelessCache()
	p := benchPod(1, 1)
	c.apply(putEvent(p, 2))
	w, err := c.Watch(ctx, WatchOptions{ResourceVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	key := "/registry/pods/" + p.Namespace + "/" + p.Name
	c.apply(store.WatchResult{Revision: 3, Events: []store.Event{{Type: store.EventDelete, KV: store.KV{Key: key, ModRevision: 3}}}})

	ev := <-w.ResultChan()
	got, ok := ev.Object.(*corev1.Pod)
	if ev.Type != watch.Deleted || !ok || got.Name != p.Name || got.ResourceVersion != "3" {
		t.Fatalf("got %s %+v, want DELETED of %s at 3", ev.Type, ev.Object, p.Name)
	}
	if _, _, err := c.Get(ctx, key, 3); err == nil {
		t.Fatal("deleted object still cached")
	}
	// The cached object itself was not modified (it is shared with readers).
	old, err := c.List(ctx, ListOptions{ResourceVersion: "2", ResourceVersionMatch: "Exact"})
	if err != nil || len(old.Objects) != 1 || old.Objects[0].(*corev1.Pod).ResourceVersion != "2" {
		t.Fatalf("state at 2: %v %v", old.Objects, err)
	}
}

func TestRunRejectsAnIncompleteConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"no store":   {Prefix: "/registry/pods/", Decode: benchDecode},
		"bad prefix": {Store: fakeStoreForValidation{}, Prefix: "/registry/pods", Decode: benchDecode},
		"no decode":  {Store: fakeStoreForValidation{}, Prefix: "/registry/pods/"},
	} {
		if err := New(cfg).Run(context.Background()); err == nil {
			t.Errorf("%s: Run accepted the config", name)
		}
	}
}

// fakeStoreForValidation is never called: Run must refuse the config first.
type fakeStoreForValidation struct{ store.Interface }
