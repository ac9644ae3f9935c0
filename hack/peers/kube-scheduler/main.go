//go:build upstream

// Command kube-scheduler is upstream's (k8s.io/kubernetes v1.37.2's
// cmd/kube-scheduler), built from berth's own module so that it shares
// berth's dependencies and build cache. bench/api runs it beside
// kube-apiserver, as berth server runs its scheduler in-process;
// bench/scheduler measures it against berth's.
//
// Built only with -tags upstream (hack/build-bench-peers.sh), so that
// go vet, staticcheck and the unit tests over ./... do not compile its
// dependencies.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
