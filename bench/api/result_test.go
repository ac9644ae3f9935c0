package main

import (
	"reflect"
	"testing"
	"time"
	"unsafe"
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

// TestMedianResultCarriesEveryFigure: each numeric figure of result, set
// to 1, 2 and 3 in three runs, comes out as 2 (a figure added to result
// but not to medianResult would come out 0). The counts of failures and
// missed events take the worst run instead.
func TestMedianResultCarriesEveryFigure(t *testing.T) {
	worst := map[string]bool{"missedAdds": true, "misdelivered": true, "failedCreates": true, "failedPatches": true, "failedDeletes": true}
	runs := make([]*result, 3)
	for i := range runs {
		runs[i] = &result{}
		v := reflect.ValueOf(runs[i]).Elem()
		for f := range v.NumField() {
			// The fields are unexported: reach them through their address.
			field := reflect.NewAt(v.Field(f).Type(), unsafe.Pointer(v.Field(f).UnsafeAddr())).Elem()
			switch field.Kind() {
			case reflect.Int, reflect.Int64:
				field.SetInt(int64(i + 1))
			case reflect.Float64:
				field.SetFloat(float64(i + 1))
			}
		}
	}
	got := reflect.ValueOf(medianResult(runs)).Elem()
	for f := range got.NumField() {
		name, want := got.Type().Field(f).Name, 2.0
		if worst[name] {
			want = 3
		}
		switch field := got.Field(f); field.Kind() {
		case reflect.Int, reflect.Int64:
			if float64(field.Int()) != want {
				t.Errorf("%s = %d, want %v", name, field.Int(), want)
			}
		case reflect.Float64:
			if field.Float() != want {
				t.Errorf("%s = %v, want %v", name, field.Float(), want)
			}
		}
	}
}
