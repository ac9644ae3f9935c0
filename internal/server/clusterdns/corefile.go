package clusterdns

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// corefile is kubeadm's default Corefile for domain, bound to address:port,
// with berth's in-process kubernetes directive in place of kubernetes. Left
// out: health and ready (nothing probes an in-process server), prometheus
// (the server has its own metrics), loop (it exits the whole process on a
// detected loop) and reload (the Corefile is generated, not edited).
func corefile(domain string, address net.IP, port int, resolvConf string) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".:%d {\n", port)
	fmt.Fprintf(&b, "    bind %s\n", address)
	b.WriteString("    errors\n")
	fmt.Fprintf(&b, "    %s %s in-addr.arpa ip6.arpa {\n", directive, domain)
	b.WriteString("        pods insecure\n")
	b.WriteString("        fallthrough in-addr.arpa ip6.arpa\n")
	b.WriteString("        ttl 30\n")
	b.WriteString("    }\n")
	fmt.Fprintf(&b, "    forward . %s\n", resolvConf)
	b.WriteString("    cache 30\n")
	b.WriteString("}\n")
	return b.String()
}

// listenAddress is how a client reaches a server bound to address:port.
func listenAddress(address net.IP, port int) string {
	return net.JoinHostPort(address.String(), strconv.Itoa(port))
}
