// Package ports finds free loopback TCP ports for tests that must pass a
// port to a child process (which then binds it itself).
//
// Ports are picked below the kernel's ephemeral range: a port from
// 127.0.0.1:0 comes from that range, and between being picked and being
// bound by the child it can be taken as the source port of any outgoing
// connection on the machine (that made a test fail in CI with "address
// already in use"). Below the range only another explicit bind can take it.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
)

// Free returns a TCP port on 127.0.0.1 that was free a moment ago.
func Free(t testing.TB) int { return FreeN(t, 1)[0] }

// FreeN returns n distinct such ports: all are held open together while
// they are picked, so none is handed out twice.
func FreeN(t testing.TB, n int) []int {
	t.Helper()
	lo, hi := candidateRange(ephemeralStart())
	out := make([]int, 0, n)
	for range n {
		l, err := listenInRange(lo, hi)
		if err != nil {
			t.Fatalf("ports: %v", err)
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out
}

// candidateRange is the 12000 ports below the ephemeral range (or below
// 32768 when the range cannot be read), never under 1024.
func candidateRange(ephemeral int) (lo, hi int) {
	hi = ephemeral - 1
	lo = max(hi-12000, 1024)
	return lo, hi
}

// ephemeralStart reads the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	var first, last int
	if err == nil {
		if _, err := fmt.Sscan(string(b), &first, &last); err == nil && first > 2048 {
			return first
		}
	}
	return 32768
}

// listenInRange binds a random port in [lo, hi]; random so that tests
// running in parallel processes rarely try the same port.
func listenInRange(lo, hi int) (net.Listener, error) {
	var lastErr error
	for range 200 {
		port := lo + rand.IntN(hi-lo+1)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			return l, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("no free port in %d-%d: %w", lo, hi, lastErr)
}
