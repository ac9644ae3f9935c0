#!/usr/bin/env bash
# CRI benchmark: berth runtime beside containerd 1.6 (bench/cri), written into
# docs/benchmarks.md. Builds berth into a temporary directory first, so the run
# measures this checkout and leaves _output alone. Needs root and the tools of
# hack/setup.sh (critest, containerd, runc, CNI plugins). Flags go to
# bench/cri, e.g. hack/bench-cri.sh -rounds 1 -pods 20.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"
if ((EUID != 0)); then echo "bench-cri.sh: must run as root" >&2; exit 1; fi
[[ -x "$TOOLS_DIR/critest" ]] || { echo "bench-cri.sh: $TOOLS_DIR/critest missing; run hack/setup.sh" >&2; exit 1; }
BUILD=$(mktemp -d /tmp/berth-bench-cri.XXXXXX)
trap 'rm -rf "$BUILD"' EXIT
log "bench-cri: building berth into $BUILD"
hack/build.sh "$BUILD"
go run ./bench/cri -berth "$BUILD/berth" -critest "$TOOLS_DIR/critest" "$@"
