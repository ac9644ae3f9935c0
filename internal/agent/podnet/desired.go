package podnet

import (
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var everything = labels.Everything()

// Route is one host-gw route: the pods of Dst live behind the node at Via.
type Route struct {
	Dst netip.Prefix
	Via netip.Addr
}

// nodeView is what pod networking needs of a Node.
type nodeView struct {
	name     string
	podCIDRs []netip.Prefix
	ips      []netip.Addr // InternalIPs
}

func view(n *v1.Node) nodeView {
	out := nodeView{name: n.Name}
	cidrs := n.Spec.PodCIDRs
	if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
		cidrs = []string{n.Spec.PodCIDR}
	}
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out.podCIDRs = append(out.podCIDRs, p.Masked())
		}
	}
	for _, a := range n.Status.Addresses {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			out.ips = append(out.ips, ip.Unmap())
		}
	}
	return out
}

func (n nodeView) podCIDRStrings() []string {
	out := make([]string, len(n.podCIDRs))
	for i, p := range n.podCIDRs {
		out[i] = p.String()
	}
	return out
}

// sameFamily is the node's first InternalIP of p's address family.
func (n nodeView) sameFamily(p netip.Prefix) (netip.Addr, bool) {
	for _, ip := range n.ips {
		if ip.Is4() == p.Addr().Is4() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

func findNode(nodes []*v1.Node, name string) *nodeView {
	for _, n := range nodes {
		if n.Name == name {
			v := view(n)
			return &v
		}
	}
	return nil
}

// desiredRoutes is one route per other node's podCIDR via that node's
// InternalIP of the same family. Nodes without either are skipped, as are
// CIDRs overlapping this node's own and nodes sharing one of its addresses
// (two agents on one machine cannot route to each other this way).
func desiredRoutes(self *nodeView, nodes []*v1.Node) []Route {
	var own nodeView
	if self != nil {
		own = *self
	}
	var out []Route
	for _, n := range nodes {
		if n.Name == own.name {
			continue
		}
		peer := view(n)
		if slices.ContainsFunc(peer.ips, func(ip netip.Addr) bool { return slices.Contains(own.ips, ip) }) {
			continue
		}
		for _, cidr := range peer.podCIDRs {
			via, ok := peer.sameFamily(cidr)
			if !ok || slices.ContainsFunc(own.podCIDRs, cidr.Overlaps) {
				continue
			}
			out = append(out, Route{Dst: cidr, Via: via})
		}
	}
	return out
}
