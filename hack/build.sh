#!/usr/bin/env bash
# Builds berth and its companions (berth-agent, berth-kubectl, berth-runtime,
# berth-monitor) into OUTDIR (default _output). The embedded
# kubectl reports its client version from ldflags, as upstream's builds set
# them; they are derived from the client-go version in go.mod.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$REPO_ROOT/_output}
cd "$REPO_ROOT"
kube_version=$(go list -m -f '{{.Version}}' k8s.io/client-go | sed 's/^v0\./v1./')
ldflags="-X k8s.io/client-go/pkg/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitVersion=$kube_version"
mkdir -p "$out"
# `berth agent`, `berth kubectl` and `berth runtime` exec berth-agent,
# berth-kubectl and berth-runtime, and that execs berth-monitor, each from
# beside its own executable (internal/sibling): they are built and shipped
# together.
# Static (no cgo): nothing in berth needs libc, and a cgo build of the
# multicall binary exports every symbol dynamically (kustomize imports Go's
# plugin package), which cost each berth process ~27 MB of RSS and each
# monitor ~1.4 MB (measured with bench/cri's RSS readings).
CGO_ENABLED=0 go build -buildvcs=true -ldflags "$ldflags" -o "$out/" ./cmd/berth ./cmd/berth-agent ./cmd/berth-kubectl ./cmd/berth-runtime ./cmd/berth-monitor
