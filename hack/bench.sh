#!/usr/bin/env bash
# Runs one of the benchmarks under bench/; each writes its section of
# docs/benchmarks.md (cri, api and scheduler by default, podstartup with
# -write-docs; -out "" prints only). Flags after NAME go to the program: -h
# lists them.
#
#   hack/bench.sh api|cri|podstartup|scheduler [FLAGS...]
#
#   api         berth server beside kube-apiserver, etcd, kube-controller-manager
#               and kube-scheduler (bench/api); the peers come from
#               hack/build-bench-peers.sh (once, about 10 minutes),
#               or run it with --peer=false.
#   scheduler   creation to bound on a berth server (bench/scheduler); with
#               -peer kube-scheduler, after hack/build-bench-peers.sh kube-scheduler.
#   cri         berth runtime beside containerd 1.6 (bench/cri). Root.
#   podstartup  pod startup under berth agent over berth runtime and over
#               containerd (bench/podstartup). Root.
#
# cri and podstartup first build berth into a temporary directory, so the
# run measures this checkout and leaves _output alone; they need root and
# what hack/setup.sh installs (critest, containerd, runc, CNI plugins,
# busybox-static, gcc).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

usage() {
  sed -n '/^#   hack\/bench.sh/,/^# busybox/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}
(($# > 0)) || usage
name=$1
shift

# wants_help reports whether the flags only ask the program for its usage,
# which needs no root and no build.
wants_help() {
  local arg
  for arg in "$@"; do
    case $arg in -h | -help | --help) return 0 ;; esac
  done
  return 1
}

# build_berth_for NAME: builds berth into a temporary directory (removed on
# exit) and sets BUILD to it; skipped when only help is asked for.
build_berth_for() {
  if ((EUID != 0)); then
    echo "bench.sh $1: must run as root" >&2
    exit 1
  fi
  BUILD=$(mktemp -d "/tmp/berth-bench-$1.XXXXXX")
  trap 'rm -rf "$BUILD"' EXIT
  log "bench $1: building berth into $BUILD"
  hack/build.sh "$BUILD"
}

case $name in
api | scheduler)
  exec go run "./bench/$name" "$@"
  ;;
cri)
  if wants_help "$@"; then exec go run ./bench/cri "$@"; fi
  [[ -x "$TOOLS_DIR/critest" ]] || { echo "bench.sh cri: $TOOLS_DIR/critest missing; run hack/setup.sh" >&2; exit 1; }
  build_berth_for cri
  go run ./bench/cri -berth "$BUILD/berth" -critest "$TOOLS_DIR/critest" "$@"
  ;;
podstartup)
  if wants_help "$@"; then exec go run ./bench/podstartup "$@"; fi
  build_berth_for podstartup
  go run ./bench/podstartup -berth "$BUILD/berth" "$@"
  ;;
*)
  echo "bench.sh: unknown benchmark $name" >&2
  usage
  ;;
esac
