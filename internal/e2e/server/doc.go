// Package server holds the whole-cluster tests of `berth server`, each on
// the real binary: a single-node cluster (the server supervising its own
// runtime and agent) running pods through kubectl, and the control plane's
// durability across kill -9, snapshot and restore, its listeners and its
// scheduler. There is no library code here, only the tests.
package server
