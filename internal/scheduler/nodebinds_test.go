package scheduler

import (
	"context"
	"testing"
)

func TestNodeBindLimitBoundsEachNodeAlone(t *testing.T) {
	l := newNodeBindLimit()
	ctx := context.Background()
	var releases []func()
	for range bindsPerNode {
		release, err := l.acquire(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}

	full, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.acquire(full, "a"); err == nil {
		t.Fatalf("a bind slot beyond %d was handed out on node a", bindsPerNode)
	}
	releaseB, err := l.acquire(ctx, "b")
	if err != nil {
		t.Fatalf("node b is limited by node a's binds: %v", err)
	}
	releaseB()

	releases[0]()
	release, err := l.acquire(ctx, "a")
	if err != nil {
		t.Fatalf("a released slot was not handed out again: %v", err)
	}
	release()
	for _, r := range releases[1:] {
		r()
	}
	if len(l.nodes) != 0 {
		t.Errorf("%d node entries left with no binds in flight", len(l.nodes))
	}
}
