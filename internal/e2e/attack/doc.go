// Package attack holds the end-to-end test of berth's pod boundary from an
// attacker's seat: a user holding only the `edit` ClusterRole in one
// namespace (a client certificate from the cluster's client CA) and a node
// joined with the server's bootstrap token, against one real `berth server`
// whose local node runs pods through `berth runtime` and runc. Each subtest
// is one way across the boundary and asserts the refusal upstream
// Kubernetes gives, and that the attempt changed nothing. There is no
// library code here, only the test.
package attack
