package certificates

import (
	"net"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// addressClaims remembers every Node name and every IP address any Node
// has reported, for as long as the controller runs: the node informer
// feeds it each Node it sees, from the first list on, and deletions take
// nothing away. So a node cannot get a serving certificate for an address
// another node had, by waiting until that node is gone or has moved, nor
// for another node's name by reporting it as its own host name.
//
// The record lives in memory: after a server restart it starts again from
// the Nodes that exist then. A node that legitimately takes over an
// address another Node reported is refused until then; an administrator
// can approve its request (kubectl certificate approve).
type addressClaims struct {
	mu    sync.Mutex
	ips   map[string][]string // canonical IP -> names of the Nodes that reported it
	names map[string]bool     // Node names
}

func newAddressClaims() *addressClaims {
	return &addressClaims{ips: map[string][]string{}, names: map[string]bool{}}
}

// record notes node's name and the IPs it reports.
func (c *addressClaims) record(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names[strings.ToLower(node.Name)] = true
	for _, a := range node.Status.Addresses {
		ip := net.ParseIP(a.Address)
		if ip == nil {
			continue
		}
		key := ip.String()
		if !slices.Contains(c.ips[key], node.Name) {
			c.ips[key] = append(c.ips[key], node.Name)
		}
	}
}

// otherNodeWithIP returns a Node other than name that ever reported ip.
func (c *addressClaims) otherNodeWithIP(ip net.IP, name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.ips[ip.String()] {
		if n != name {
			return n, true
		}
	}
	return "", false
}

// isOtherNodeName reports whether dns is the name of a Node other than name.
func (c *addressClaims) isOtherNodeName(dns, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !strings.EqualFold(dns, name) && c.names[strings.ToLower(dns)]
}
