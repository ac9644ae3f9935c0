//go:build upstream

// Command kubelet is upstream's kubelet (k8s.io/kubernetes v1.37.2's
// cmd/kubelet), built from berth's own module so that it shares berth's
// dependencies and build cache. hack/conformance.sh --kubelet-node joins it to
// a berth server as a node of its own, on berth runtime, to run the
// [NodeConformance] tests against it beside berth agent.
//
// Built only with -tags upstream (hack/build-bench-peers.sh), so that
// go vet, staticcheck and the unit tests over ./... do not compile the
// kubelet's dependencies.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // for client metric registration
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
