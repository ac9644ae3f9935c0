// Package differential sends the same requests to berth server and to
// kube-apiserver v1.37.2 and compares the answers: the HTTP code, the
// Status reason and its causes' field paths, the object returned (after the
// normalisations normalise lists), the etcd key the object is stored
// under and the stored object's apiVersion and kind.
//
// The cases come from upstream's own storage test data
// (testdata/cases.json, written by hack/tools/differential-cases from
// k8s.io/kubernetes/test/integration/etcd): per resource of the core group,
// apps/v1, batch/v1, discovery.k8s.io EndpointSlices, node.k8s.io
// RuntimeClasses, policy PodDisruptionBudgets, scheduling.k8s.io
// PriorityClasses, autoscaling's HorizontalPodAutoscalers, CRDs and
// APIServices (and the other kinds hack/tools/differential-cases keeps), its discovery entry, create, dry-run create, get, list,
// update, the four patch types, a status update where upstream serves
// status, a resize and a refused one where it serves resize, invalid
// mutations, and delete. Every difference must be listed in
// testdata/known-differences.txt with a reason, and every listed difference
// must still occur.
//
// Both servers run beside the test: berth server in the test's process
// (internal/server, no local agent), kube-apiserver as a child process
// (built from hack/peers/kube-apiserver when _output/bench/kube-apiserver
// is missing), each on an etcd member of its own that the test embeds and
// reads directly. berth reaches its member as --etcd-servers does (mutual
// TLS on loopback): its own embedded member has no listener the test could
// read. kube-apiserver runs upstream's default admission plugins, so what
// they add and berth does not shows as differences.
package differential
