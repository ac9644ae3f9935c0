package main

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var samples []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := percentile(samples, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile([]time.Duration{7, 3, 5}, 50); got != 5 {
		t.Errorf("median of 3 = %v, want 5", got)
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v, want 0", got)
	}
}

func TestPerSecond(t *testing.T) {
	if got := perSecond(3000, 4*time.Second); got != 750 {
		t.Errorf("3000 in 4s = %v/s, want 750", got)
	}
	if got := perSecond(10, 0); got != 0 {
		t.Errorf("rate over no time = %v, want 0", got)
	}
}
