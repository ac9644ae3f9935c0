package nodeipam

import (
	"errors"
	"net/netip"
	"testing"
)

func TestCIDRSetAllocatesEverySubnetOnceThenIsFull(t *testing.T) {
	set, err := newCIDRSet(netip.MustParsePrefix("10.88.0.0/22"), 24)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.88.0.0/24", "10.88.1.0/24", "10.88.2.0/24", "10.88.3.0/24"}
	for _, w := range want {
		got, err := set.allocate()
		if err != nil || got.String() != w {
			t.Fatalf("allocate = %v, %v; want %s", got, err, w)
		}
	}
	if _, err := set.allocate(); !errors.Is(err, ErrFull) {
		t.Fatalf("allocate on a full set: %v", err)
	}
	if err := set.release(netip.MustParsePrefix("10.88.2.0/24")); err != nil {
		t.Fatal(err)
	}
	if got, err := set.allocate(); err != nil || got.String() != "10.88.2.0/24" {
		t.Fatalf("allocate after release = %v, %v", got, err)
	}
}

func TestCIDRSetOccupySkipsTakenSubnets(t *testing.T) {
	set, err := newCIDRSet(netip.MustParsePrefix("10.88.0.0/16"), 24)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"10.88.0.0/24", "10.88.1.0/24"} {
		if fresh, err := set.occupy(netip.MustParsePrefix(p)); !fresh || err != nil {
			t.Fatalf("occupy %s = %v, %v", p, fresh, err)
		}
	}
	if fresh, err := set.occupy(netip.MustParsePrefix("10.88.1.0/24")); fresh || err != nil {
		t.Fatalf("second occupy = %v, %v; want taken", fresh, err)
	}
	if got, _ := set.allocate(); got.String() != "10.88.2.0/24" {
		t.Fatalf("allocate = %s", got)
	}
	if set.inUse != 3 {
		t.Fatalf("inUse = %d", set.inUse)
	}
	for _, bad := range []string{"10.89.0.0/24", "10.88.0.0/25", "10.88.0.128/24", "10.0.0.0/8"} {
		if _, err := set.occupy(netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("occupy %s accepted", bad)
		}
	}
	if set.inUse != 3 {
		t.Fatalf("bad input changed the set: inUse = %d", set.inUse)
	}
}

func TestCIDRSetIPv6(t *testing.T) {
	set, err := newCIDRSet(netip.MustParsePrefix("fd00:10:88::/56"), 64)
	if err != nil {
		t.Fatal(err)
	}
	set.allocate()
	got, err := set.allocate()
	if err != nil || got.String() != "fd00:10:88:1::/64" {
		t.Fatalf("second IPv6 subnet = %v, %v", got, err)
	}
	idx, err := set.index(got)
	if err != nil || idx != 1 {
		t.Fatalf("index = %d, %v", idx, err)
	}
}

func TestCIDRSetRejectsBadMaskSizes(t *testing.T) {
	for _, tc := range []struct {
		cluster string
		mask    int
	}{{"10.88.0.0/16", 8}, {"10.88.0.0/16", 33}, {"10.0.0.0/8", 25}, {"fd00::/48", 129}} {
		if _, err := newCIDRSet(netip.MustParsePrefix(tc.cluster), tc.mask); err == nil {
			t.Errorf("%s with /%d accepted", tc.cluster, tc.mask)
		}
	}
}
