// Package density holds the end-to-end test of a full node: one
// `berth server` with its own runtime and agent runs 100 pods at once, all
// reach Running and Ready, and after deletion all of them, their containers
// and their sandboxes are gone. There is no library code here, only the test;
// bench/podstartup measures the same path's latency.
package density
