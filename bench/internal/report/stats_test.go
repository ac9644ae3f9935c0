package report

import "testing"

func TestQuantileIsNearestRank(t *testing.T) {
	xs := make([]int, 100)
	for i := range xs {
		xs[i] = 100 - i // 100..1, unsorted
	}
	for q, want := range map[float64]int{0.5: 50, 0.99: 99, 0.9: 90, 1: 100, 0.01: 1, 0: 1} {
		if got := Quantile(xs, q); got != want {
			t.Errorf("Quantile(1..100, %v) = %d, want %d", q, got, want)
		}
	}
	if xs[0] != 100 {
		t.Error("Quantile sorted its input in place")
	}
	if got := Median([]int{3, 1, 2}); got != 2 {
		t.Errorf("Median = %d, want 2", got)
	}
	if got := Quantile([]int(nil), 0.5); got != 0 {
		t.Errorf("Quantile of nothing = %d, want 0", got)
	}
}
