package main

import "testing"

func TestStatCPUTicksSumsOwnAndWaitedChildrensTime(t *testing.T) {
	// A command name with a space and a ')' in it; utime 7, stime 3,
	// cutime 20, cstime 10 (fields 14-17), then priority 20.
	stat := "4242 (berth mon) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 20 10 20 0 1 0 123 456 78"
	got, err := statCPUTicks(stat)
	if err != nil || got != 40 {
		t.Errorf("statCPUTicks = %d, %v; want 40", got, err)
	}
	for _, bad := range []string{"4242 berth S 1", "4242 (berth) S 1 2 3", "4242 (berth) S 1 4242 4242 0 -1 4194560 100 0 0 0 x 3 20 10"} {
		if _, err := statCPUTicks(bad); err == nil {
			t.Errorf("statCPUTicks(%q) accepted", bad)
		}
	}
}
