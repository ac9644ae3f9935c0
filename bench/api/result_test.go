package main

import (
	"testing"
	"time"
)

func TestMedianResultTakesEachFiguresMedian(t *testing.T) {
	run := func(create float64, p99 time.Duration, missed int64, rss uint64) *result {
		return &result{target: "berth", createPerSec: create, watchP99: p99, missedAdds: missed,
			memLoaded: []memory{{name: "etcd", rss: rss}, {name: "kube-apiserver", rss: 10 * rss}}}
	}
	got := medianResult([]*result{run(300, 90*time.Millisecond, 0, 5), run(100, 10*time.Millisecond, 2, 1), run(200, 50*time.Millisecond, 0, 9)})
	if got.createPerSec != 200 || got.watchP99 != 50*time.Millisecond {
		t.Errorf("creates %v/s, p99 %v; want the medians 200/s, 50ms", got.createPerSec, got.watchP99)
	}
	if got.missedAdds != 2 {
		t.Errorf("missed %d, want the worst run's 2", got.missedAdds)
	}
	if got.memLoaded[0].rss != 5 || got.memLoaded[1].rss != 50 || got.memLoaded[1].name != "kube-apiserver" {
		t.Errorf("loaded memory %+v, want per-process medians 5 and 50", got.memLoaded)
	}
}
