// Package vethaddr gives a test an address of its own on the host: the
// host's end of a veth pair whose other end is in a network namespace the
// test creates. Servers a test binds or advertises there answer on an
// address of the test's, never on the machine's.
package vethaddr

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// Pair names the link, its namespace and the /24 addresses of both ends.
type Pair struct {
	Link, NetNS    string
	HostIP, PeerIP string
}

// Add creates p until the test ends, first removing what a killed run of
// the same test left. It needs root: without it the test is skipped (or
// failed where hostcheck fails missing requirements).
func Add(t *testing.T, p Pair) {
	t.Helper()
	hostcheck.Require(t, hostcheck.Root)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	remove := func() {
		_ = exec.Command("ip", "link", "del", p.Link).Run()
		_ = exec.Command("ip", "netns", "del", p.NetNS).Run()
	}
	remove()
	t.Cleanup(remove)
	ip("netns", "add", p.NetNS)
	ip("link", "add", p.Link, "type", "veth", "peer", "name", p.Link+"p", "netns", p.NetNS)
	ip("addr", "add", p.HostIP+"/24", "dev", p.Link)
	ip("link", "set", p.Link, "up")
	ip("-n", p.NetNS, "addr", "add", p.PeerIP+"/24", "dev", p.Link+"p")
	ip("-n", p.NetNS, "link", "set", p.Link+"p", "up")
	ip("-n", p.NetNS, "link", "set", "lo", "up")
}
