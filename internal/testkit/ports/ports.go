// Package ports finds free loopback TCP ports for tests that must pass a
// port to a child process (which then binds it itself).
package ports

import (
	"net"
	"testing"
)

// Free returns a TCP port on 127.0.0.1 that was free a moment ago.
func Free(t testing.TB) int { return FreeN(t, 1)[0] }

// FreeN returns n distinct such ports: all are held open together while
// they are picked, so none is handed out twice.
func FreeN(t testing.TB, n int) []int {
	t.Helper()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("ports: %v", err)
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out
}
