#!/usr/bin/env bash
# Pod startup benchmark: the same berth agent over berth runtime and over
# containerd 1.6 (bench/podstartup), 100 pods on one node. Builds berth into a
# temporary directory first, so the run measures this checkout and leaves
# _output alone. Needs root and the packages of hack/setup.sh (containerd,
# runc, CNI plugins, busybox-static, gcc). Flags go to bench/podstartup, e.g.
# hack/bench-podstartup.sh -rounds 3 -write-docs.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"
if ((EUID != 0)); then echo "bench-podstartup.sh: must run as root" >&2; exit 1; fi
BUILD=$(mktemp -d /tmp/berth-bench-podstartup.XXXXXX)
trap 'rm -rf "$BUILD"' EXIT
log "bench-podstartup: building berth into $BUILD"
hack/build.sh "$BUILD"
go run ./bench/podstartup -berth "$BUILD/berth" "$@"
