package ports

import (
	"net"
	"strconv"
	"testing"
)

func TestPortsAreDistinctBindableAndBelowTheEphemeralRange(t *testing.T) {
	eph := ephemeralStart()
	got := FreeN(t, 50)
	seen := map[int]bool{}
	for _, p := range got {
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if p >= eph || p < 1024 {
			t.Errorf("port %d outside [1024, %d)", p, eph)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d not bindable after FreeN: %v", p, err)
		}
		l.Close()
	}
}

func TestCandidateRange(t *testing.T) {
	for _, c := range []struct{ eph, lo, hi int }{
		{32768, 20767, 32767},
		{10000, 1024, 9999},
	} {
		if lo, hi := candidateRange(c.eph); lo != c.lo || hi != c.hi {
			t.Errorf("candidateRange(%d) = %d, %d; want %d, %d", c.eph, lo, hi, c.lo, c.hi)
		}
	}
}
