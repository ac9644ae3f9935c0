// Package ha holds the whole-cluster test of high availability: two
// `berth server` replicas on a three-member etcd cluster with two joined
// nodes, under load, losing an etcd member and then a replica. There is no
// library code here, only the test.
package ha
