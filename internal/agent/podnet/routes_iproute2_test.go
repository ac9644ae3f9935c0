package podnet

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/berth/berth/internal/runtime/network"
	"github.com/berth/berth/internal/testkit/hostcheck"
)

// TestIPRouteInNamespace drives the real kernel table through `ip`, inside
// a network namespace made for the test so the host's routes are untouched.
func TestIPRouteInNamespace(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	ns, err := network.NewNetNS(filepath.Join(t.TempDir(), "netns"), "routes")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { network.RemoveNetNS(ns) })
	ctx := context.Background()
	in := func(fn func() error) {
		t.Helper()
		if err := network.WithNetNS(ns, fn); err != nil {
			t.Fatal(err)
		}
	}
	// No t.Fatal inside fn: it runs on WithNetNS's own goroutine.
	in(func() error {
		for _, args := range [][]string{
			{"link", "add", "v0", "type", "veth", "peer", "name", "v1"}, // no dummy module in every kernel
			{"link", "set", "v0", "up"},
			{"link", "set", "v1", "up"},
			{"addr", "add", "10.250.0.11/24", "dev", "v0"},
			{"route", "add", "10.99.0.0/24", "via", "10.250.0.99"}, // not berth's
		} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				return fmt.Errorf("ip %v: %w: %s", args, err, out)
			}
		}
		return nil
	})
	var r IPRoute
	toB := Route{Dst: netip.MustParsePrefix("10.88.1.0/24"), Via: netip.MustParseAddr("10.250.0.12")}
	moved := Route{Dst: toB.Dst, Via: netip.MustParseAddr("10.250.0.22")}
	list := func() []Route {
		t.Helper()
		var got []Route
		in(func() (err error) { got, err = r.List(ctx); return err })
		return got
	}

	in(func() error { return r.Replace(ctx, toB) })
	in(func() error { return r.Replace(ctx, toB) })
	if got := list(); !slices.Equal(got, []Route{toB}) {
		t.Fatalf("List = %v; want only %v (the foreign route excluded)", got, toB)
	}
	in(func() error { return r.Replace(ctx, moved) })
	if got := list(); !slices.Equal(got, []Route{moved}) {
		t.Fatalf("after the node moved: List = %v", got)
	}
	in(func() error { return r.Delete(ctx, moved) })
	in(func() error { return r.Delete(ctx, moved) })
	if got := list(); len(got) != 0 {
		t.Fatalf("after Delete: List = %v", got)
	}
	in(func() error {
		if err := r.Replace(ctx, Route{Dst: toB.Dst, Via: netip.MustParseAddr("192.0.2.1")}); err == nil {
			t.Error("a gateway that is not on-link was accepted")
		}
		out, _ := exec.Command("ip", "route", "show", "10.99.0.0/24").CombinedOutput()
		if len(out) == 0 {
			t.Error("the foreign route was removed")
		}
		return nil
	})
}
