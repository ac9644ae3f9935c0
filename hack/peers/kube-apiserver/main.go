//go:build upstream

// Command kube-apiserver is upstream's kube-apiserver (k8s.io/kubernetes
// v1.37.2's cmd/kube-apiserver), built from berth's own module so that it
// shares berth's dependencies and build cache. The differential test
// (internal/e2e/differential) runs it beside berth server.
//
// Built only with -tags upstream (hack/build-bench-peers.sh), so that
// go vet, staticcheck and the unit tests over ./... do not compile
// kube-apiserver's dependencies.
package main

import (
	"os"
	_ "time/tzdata" // for timeZone support in CronJob

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
