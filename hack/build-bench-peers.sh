#!/usr/bin/env bash
# Builds the upstream peers the benchmarks run beside berth into _output/bench/:
# with no arguments bench/api's (kube-apiserver, kube-controller-manager and
# kube-scheduler v1.37.2 and an etcd server); otherwise the named ones
# (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, etcd;
# bench/scheduler -peer kube-scheduler needs kube-scheduler, hack/conformance.sh
# --kubelet-node the kubelet). Skips each binary that is already built, so
# rerunning it is cheap. Needs only the Go module proxy.
#
#   hack/build-bench-peers.sh [etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubelet]...
#
# The Kubernetes components are built from berth's own module
# (hack/peers/<name>, thin mains over k8s.io/kubernetes/cmd/<name>/app, which
# berth already requires with its staging modules at v0.37.2): they need no
# module beyond berth's go.sum and no go.mod surgery. kube-apiserver, measured
# on 2 cores with a warm module cache and an empty build cache: 4.4 min (4.1
# min right after hack/build.sh), 6-9 s when nothing changed;
# kube-controller-manager and kube-scheduler together after berth's build:
# 1.7 min. The differential test (internal/e2e/differential) builds
# kube-apiserver through this script when it is missing. It links berth's dependency versions, which go.mod keeps
# at or above k8s.io/kubernetes's own (grpc v1.83.2 where upstream has
# v1.82.1, for one).
set -euo pipefail

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.6.16

root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/_output/bench
mkdir -p "$out"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

# build_kube COMPONENT builds k8s.io/kubernetes/cmd/COMPONENT (hack/peers/COMPONENT).
build_kube() {
	local component=$1
	local bin=$out/$component
	if [[ -x $bin ]] && "$bin" --version 2>/dev/null | grep -q "$KUBE_VERSION"; then
		echo "$component $KUBE_VERSION already built: $bin"
		return
	fi
	local ver="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
	echo "building $component $KUBE_VERSION from berth's module (hack/peers/$component)"
	(cd "$root" && GOFLAGS= go build -tags upstream -ldflags "$ver" -o "$bin" "./hack/peers/$component")
	echo "built $bin"
}

build_etcd() {
	local bin=$out/etcd
	if [[ -x $bin ]] && "$bin" --version 2>/dev/null | grep -q "${ETCD_VERSION#v}"; then
		echo "etcd $ETCD_VERSION already built: $bin"
		return
	fi
	local dir=$out/etcd-main
	mkdir -p "$dir"
	(
		cd "$dir"
		[[ -f go.mod ]] || go mod init berth.local/bench/etcd
		cat >main.go <<'EOF'
// Command etcd is the upstream etcd server, for bench/api's peer.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
		go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
		go mod tidy
		go build -trimpath -o "$bin" .
	)
	echo "built $bin"
}

if (($# == 0)); then
	set -- etcd kube-apiserver kube-controller-manager kube-scheduler
fi
for peer in "$@"; do # all names checked before anything is built
	case $peer in
	etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kubelet) ;;
	*)
		echo "build-bench-peers.sh: unknown peer $peer (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, etcd)" >&2
		exit 2
		;;
	esac
done
for peer in "$@"; do
	case $peer in
	etcd) build_etcd ;;
	*) build_kube "$peer" ;;
	esac
done
