package nodeipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
)

// maxSubnetBits caps how many node subnets one cluster range is split into
// (2^16), as upstream does, so the allocation map stays small.
const maxSubnetBits = 16

// ErrFull means every node subnet of the cluster range is taken.
var ErrFull = errors.New("no free pod CIDR left in the cluster range")

// cidrSet hands out the node-sized subnets of one cluster range. Written by
// hand: upstream's cidrset lives in k8s.io/kubernetes, which is not meant to
// be imported as a library, and the whole job is index ↔ prefix arithmetic
// plus a bitmap. Not safe for concurrent use: the controller's single
// worker owns it.
type cidrSet struct {
	cluster  netip.Prefix
	maskSize int
	used     []bool
	inUse    int
	next     int // where the next search starts, so freed subnets are not reused at once
}

// newCIDRSet splits cluster into subnets of maskSize bits.
func newCIDRSet(cluster netip.Prefix, maskSize int) (*cidrSet, error) {
	cluster = cluster.Masked()
	bits := cluster.Addr().BitLen()
	switch {
	case maskSize < cluster.Bits() || maskSize > bits:
		return nil, fmt.Errorf("node CIDR mask size %d must lie between the cluster CIDR's %d and %d", maskSize, cluster.Bits(), bits)
	case maskSize-cluster.Bits() > maxSubnetBits:
		return nil, fmt.Errorf("node CIDR mask size %d splits %s into more than 2^%d subnets", maskSize, cluster, maxSubnetBits)
	}
	return &cidrSet{cluster: cluster, maskSize: maskSize, used: make([]bool, 1<<(maskSize-cluster.Bits()))}, nil
}

// allocate takes the next free subnet.
func (s *cidrSet) allocate() (netip.Prefix, error) {
	for i := range s.used {
		idx := (s.next + i) % len(s.used)
		if !s.used[idx] {
			s.used[idx] = true
			s.inUse++
			s.next = (idx + 1) % len(s.used)
			return s.subnet(idx), nil
		}
	}
	return netip.Prefix{}, ErrFull
}

// occupy marks p taken; it reports false when p was taken already.
func (s *cidrSet) occupy(p netip.Prefix) (bool, error) {
	idx, err := s.index(p)
	if err != nil {
		return false, err
	}
	if s.used[idx] {
		return false, nil
	}
	s.used[idx] = true
	s.inUse++
	return true, nil
}

// release frees p; releasing a free subnet is a no-op.
func (s *cidrSet) release(p netip.Prefix) error {
	idx, err := s.index(p)
	if err != nil {
		return err
	}
	if s.used[idx] {
		s.used[idx] = false
		s.inUse--
	}
	return nil
}

// subnet is the idx-th node subnet: the cluster base plus idx << host bits.
func (s *cidrSet) subnet(idx int) netip.Prefix {
	hostBits := uint(s.cluster.Addr().BitLen() - s.maskSize)
	n := new(big.Int).SetBytes(s.cluster.Addr().AsSlice())
	n.Add(n, new(big.Int).Lsh(big.NewInt(int64(idx)), hostBits))
	buf := make([]byte, len(s.cluster.Addr().AsSlice()))
	addr, _ := netip.AddrFromSlice(n.FillBytes(buf))
	return netip.PrefixFrom(addr, s.maskSize)
}

// index is the inverse of subnet; p must be one of the set's subnets exactly.
func (s *cidrSet) index(p netip.Prefix) (int, error) {
	if p.Bits() != s.maskSize || p.Masked() != p || !s.cluster.Contains(p.Addr()) {
		return 0, fmt.Errorf("%s is not a /%d subnet of the cluster CIDR %s", p, s.maskSize, s.cluster)
	}
	hostBits := uint(s.cluster.Addr().BitLen() - s.maskSize)
	off := new(big.Int).Sub(new(big.Int).SetBytes(p.Addr().AsSlice()), new(big.Int).SetBytes(s.cluster.Addr().AsSlice()))
	return int(off.Rsh(off, hostBits).Int64()), nil
}
