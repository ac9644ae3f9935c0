// Package multinode holds the end-to-end test of a cluster of several nodes:
// one `berth server` and three nodes, each a `berth runtime` and a
// `berth agent` in a network namespace of its own, on one bridge, joined
// with the server's join token. Pods on different nodes reach each other by
// pod IP through the node IPAM controller's podCIDRs and the agents'
// host-gw routes. There is no library code here, only the test.
package multinode
