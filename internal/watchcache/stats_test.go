package watchcache_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/berth/berth/internal/watchcache"
)

// Stats follows creates, updates and deletes: the object count and the
// average of the stored values' sizes.
func TestStatsCountObjectsAndAverageStoredSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, s := newPodCache(t, nil)
	if got := c.Stats(); got.ObjectCount != 0 || got.EstimatedAverageObjectSizeBytes != 0 {
		t.Fatalf("empty cache: %+v", got)
	}
	size := func(p any) int64 { b, _ := json.Marshal(p); return int64(len(b)) }
	a, b := pod("ns", "a", "node-a", nil), pod("ns", "b", "node-a", map[string]string{"a-longer-label": "with-a-longer-value"})
	createPod(t, s, a)
	rb := createPod(t, s, b)
	fresh(t, c)
	if got, want := c.Stats(), (size(a)+size(b))/2; got.ObjectCount != 2 || got.EstimatedAverageObjectSizeBytes != want {
		t.Fatalf("after two creates: %+v, want 2 objects of %d bytes on average", got, want)
	}
	b.Labels["another"] = "label"
	updatePod(t, s, b, rb)
	if _, err := s.Delete(ctx, podKey(a), 0); err != nil {
		t.Fatal(err)
	}
	fresh(t, c)
	if got, want := c.Stats(), size(b); got.ObjectCount != 1 || got.EstimatedAverageObjectSizeBytes != want {
		t.Fatalf("after an update and a delete: %+v, want 1 object of %d bytes", got, want)
	}
}

// fresh waits, through a consistent list, until c holds every write made so far.
func fresh(t *testing.T, c *watchcache.Cache) {
	t.Helper()
	if _, err := c.List(context.Background(), watchcache.ListOptions{}); err != nil {
		t.Fatalf("consistent list: %v", err)
	}
}
