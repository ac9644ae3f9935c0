package pods

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestBackoffDoublesToFiveMinutes(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	b := newBackoff(clk)
	if _, _, waiting := b.Waiting("k"); waiting {
		t.Fatal("fresh key is backing off")
	}
	var got []time.Duration
	for range 7 {
		got = append(got, b.Next("k"))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays = %v, want %v", got, want)
		}
	}
	if rem, _, waiting := b.Waiting("k"); !waiting || rem != 5*time.Minute {
		t.Fatalf("Waiting = %v %v, want 5m remaining", rem, waiting)
	}
	clk.Step(5 * time.Minute)
	if _, _, waiting := b.Waiting("k"); waiting {
		t.Fatal("still backing off after the delay passed")
	}
	b.ResetPrefix("k")
	if b.Next("k") != 10*time.Second {
		t.Fatal("reset did not restart at 10s")
	}
}
