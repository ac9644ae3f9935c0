package apiserver

import (
	"sync"
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/service/allocator"

	"github.com/berth/berth/internal/testkit/etcdtest"
)

// TestStoredRangeNeverHandsOutAnItemTwice runs two bitmaps over one store,
// as two server replicas do, allocating concurrently: every item is handed
// out once, and the stored bitmap holds them all; a release by one is seen
// by the other.
func TestStoredRangeNeverHandsOutAnItemTwice(t *testing.T) {
	st := etcdtest.New(t)
	const size, each = 128, 40
	var replicas [2]*storedRange
	for i := range replicas {
		if _, err := storedRangeFactory(st, "/registry/ranges/test", api.Resource("testallocations"), &replicas[i])(size, "test", 16); err != nil {
			t.Fatal(err)
		}
	}
	got := make([][]int, len(replicas))
	var wg sync.WaitGroup
	for i, r := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				offset, ok, err := r.AllocateNext()
				if err != nil || !ok {
					t.Errorf("replica %d: AllocateNext = %d, %v, %v", i, offset, ok, err)
					return
				}
				got[i] = append(got[i], offset)
			}
		}()
	}
	wg.Wait()
	seen := map[int]int{}
	for i, offsets := range got {
		for _, o := range offsets {
			if other, dup := seen[o]; dup {
				t.Fatalf("item %d handed out to replicas %d and %d", o, other, i)
			}
			seen[o] = i
		}
	}
	if len(seen) != 2*each {
		t.Fatalf("%d items handed out, want %d", len(seen), 2*each)
	}
	stored, err := replicas[0].Get()
	if err != nil {
		t.Fatal(err)
	}
	check := allocator.NewAllocationMapWithOffset(size, "test", 16)
	if err := check.Restore(stored.Range, stored.Data); err != nil {
		t.Fatal(err)
	}
	if used := size - check.Free(); used != 2*each {
		t.Fatalf("the stored bitmap holds %d items, want %d", used, 2*each)
	}
	// One replica releases an item the other allocated; the other can
	// then take it again explicitly.
	o := got[1][0]
	if err := replicas[0].Release(o); err != nil {
		t.Fatal(err)
	}
	if ok, err := replicas[1].Allocate(o); err != nil || !ok {
		t.Fatalf("allocating %d after the other replica released it: %v, %v", o, ok, err)
	}
	if ok, err := replicas[0].Allocate(o); err != nil || ok {
		t.Fatalf("allocating %d twice: %v, %v; want refused", o, ok, err)
	}
}
