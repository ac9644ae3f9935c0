#!/usr/bin/env bash
# The whole test suite: lint, verify (generated files are current), the unit
# tests as a user without root, then as root what they could not run, fuzzing,
# critest, the README's run command and the Kubernetes conformance CI list.
# Each test runs once: the root pass takes only the packages
# hack/unit-exclude.txt lists and the tests that skipped (themselves or a
# subtest) in the unit pass.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
one_build_config
"$REPO_ROOT/hack/setup.sh"
cd "$REPO_ROOT"

"$REPO_ROOT/hack/lint.sh"
"$REPO_ROOT/hack/verify.sh"

SKIPPED=$(mktemp /tmp/berth-unit-skipped.XXXXXX)
CONFORMANCE_RESULTS=$(mktemp /tmp/berth-conformance-results.XXXXXX)
# The unit pass keeps its test binaries here (hack/unit-exec.sh) for the
# root pass over the tests that skipped: linking them again would take
# most of that pass.
UNIT_BIN_DIR=$(mktemp -d /tmp/berth-unit-bin.XXXXXX)
trap 'rm -rf "$SKIPPED" "$CONFORMANCE_RESULTS" "$UNIT_BIN_DIR"' EXIT
UNIT_BIN_DIR="$UNIT_BIN_DIR" UNIT_SKIPPED_OUT="$SKIPPED" "$REPO_ROOT/hack/unit.sh"

# Missing host prerequisites fail the suite instead of skipping tests.
export BERTH_STRICT_HOST=1
# The root pass runs in two lanes. The main lane takes one package at a
# time: several start whole clusters (berth server with its runtime,
# containerd) on host-wide resources (the NRI socket, the default CNI
# bridge) and must not run side by side. The side lane runs beside it what
# touches none of those: packages whose clusters live in network namespaces
# of their own or run no node, the containerd test kit (its own bridge,
# berthagt0), fuzzing, then the root-only tests of the agent's packages
# that drive the kit's runtime without running a whole agent. Both mostly
# wait on processes, so on two cores the lanes overlap instead of queueing.
SIDE_LANE=(internal/e2e/differential internal/e2e/multinode internal/runtime/idmap internal/runtime/nspin internal/testkit/cri)
# Packages whose skipped tests join the side lane. Not internal/agent nor
# internal/agent/gc: they run whole agents or their collectors, which share
# the kubelet port, kube-proxy's nftables table and the host's pod cgroups
# with the main lane's clusters.
SIDE_LANE_SKIPPED='/internal/agent/(cri|nodeserver|pods)$'
mapfile -t excluded < <(grep -v '^#' hack/unit-exclude.txt | awk 'NF {print $1}')
main_lane=() side_lane=()
for dir in "${excluded[@]}"; do
  if [[ " ${SIDE_LANE[*]} " == *" $dir "* ]]; then side_lane+=("./$dir"); else main_lane+=("./$dir"); fi
done
((${#side_lane[@]} == ${#SIDE_LANE[@]})) ||
  { echo "test.sh: every SIDE_LANE package must be listed in hack/unit-exclude.txt" >&2; exit 1; }
# The differential test's kube-apiserver, built here (from berth's module,
# sharing its build cache) rather than inside the test's timeout.
"$REPO_ROOT/hack/build-bench-peers.sh" kube-apiserver

# run_skipped_as_root OUT PACKAGE...: the tests of each PACKAGE that skipped
# without root in the unit pass, as root, from the test binary the unit
# pass kept; OUT is a scratch file for a binary's output.
run_skipped_as_root() {
  local out=$1 module pkg names rel bin start
  shift
  module=$(go list -m)
  for pkg in "$@"; do
    names=$(awk -v p="$pkg" '$1 == p {print $2}' "$SKIPPED" | sort -u | paste -sd '|')
    rel=${pkg#"$module"/}
    bin="$UNIT_BIN_DIR/${rel//\//%}.test"
    if [[ ! -x "$bin" ]]; then # the unit pass ran without root: nothing kept
      go test -count=1 -timeout 25m -run "^($names)\$" "$pkg" || return
      continue
    fi
    start=$SECONDS
    (cd "$REPO_ROOT/$rel" && "$bin" -test.paniconexit0 -test.count=1 -test.timeout=25m -test.run "^($names)\$") >"$out" 2>&1 ||
      { cat "$out"; echo "FAIL $pkg"; return 1; }
    echo "ok   $pkg $((SECONDS - start))s"
  done
}
mapfile -t skipped_pkgs < <(awk '{print $1}' "$SKIPPED" | sort -u)
main_skipped=() side_skipped=()
for pkg in "${skipped_pkgs[@]}"; do
  if [[ "$pkg" =~ $SIDE_LANE_SKIPPED ]]; then side_skipped+=("$pkg"); else main_skipped+=("$pkg"); fi
done

# side_lane_run: the side lane's packages, the fuzz targets for 5 s with
# one worker (the main lane's clusters keep the other core), then the
# skipped tests of the packages SIDE_LANE_SKIPPED names.
# internal/apiserver's whole-server target is left to hack/fuzz.sh's long
# runs: its 685 seeds take longer than 5 s to replay, so a 5 s run never got
# past its baseline (the unit pass replays those seeds too), yet fuzzing
# builds every package of a target's graph instrumented, and the server's
# graph adds 1395 packages to the 813 of the other targets' packages.
side_lane_run() {
  log "go test (root, side lane): ${side_lane[*]}"
  go test -p 1 -count=1 -timeout 25m "${side_lane[@]}" || return
  log "fuzz (side lane): the targets outside internal/apiserver, 5s each"
  FUZZ_SKIP='^internal/apiserver$' FUZZ_PARALLEL=1 "$REPO_ROOT/hack/fuzz.sh" 5 || return
  log "go test (root, side lane): ${#side_skipped[@]} packages' tests that skipped without root"
  run_skipped_as_root "$UNIT_BIN_DIR/side.out" "${side_skipped[@]}"
}
SIDE_LOG=$(mktemp /tmp/berth-side-lane.XXXXXX)
# A process group of its own (job control on for the start), so that it
# can be stopped whole, test binaries and all.
set -m
side_lane_run >"$SIDE_LOG" 2>&1 &
side_pid=$!
set +m
# stop_side_lane stops the side lane if it still runs (the main lane ended
# first). Nothing in it may fail: under errexit a failing command in the
# EXIT trap would become the suite's exit status.
stop_side_lane() {
  [[ -n "$side_pid" ]] || return 0
  kill -TERM -- "-$side_pid" 2>/dev/null || true
  wait "$side_pid" 2>/dev/null || true
}
# The side lane is stopped, and its log removed, however the main lane ends.
trap 'stop_side_lane; rm -rf "$SKIPPED" "$CONFORMANCE_RESULTS" "$UNIT_BIN_DIR" "$SIDE_LOG"' EXIT

log "go test (root): the packages hack/unit-exclude.txt lists, but the side lane's"
go test -p 1 -count=1 -timeout 25m "${main_lane[@]}"
log "go test (root): ${#main_skipped[@]} packages' tests that skipped without root"
run_skipped_as_root "$UNIT_BIN_DIR/main.out" "${main_skipped[@]}"
# critest's runtime uses the default network (berth0), which the side lane
# never touches.
"$REPO_ROOT/hack/critest.sh"
side_rc=0
wait "$side_pid" || side_rc=$?
side_pid=""
log "side lane: exited $side_rc"
cat "$SIDE_LOG"
((side_rc == 0)) || { echo "test.sh: the side lane failed (its log above)" >&2; exit "$side_rc"; }

# The README's run command, end to end, as a smoke test: a Ready node and the
# example pod Running from locally built images, in a scratch data directory.
# Its node reports no disk pressure, as the test clusters' nodes: CI's disk may
# be nearly full.
log "smoke: hack/run.sh"
SMOKE_DIR=$(mktemp -d /tmp/berth-smoke.XXXXXX)
BERTH_SMOKE=1 BERTH_DATA_DIR="$SMOKE_DIR/data" BERTH_SOCKET_DIR="$SMOKE_DIR/run" BERTH_PORT=16443 \
  "$REPO_ROOT/hack/run.sh" --agent-port 0 --agent-arg="--eviction-hard=$TEST_EVICTION_HARD"
rm -rf "$SMOKE_DIR"

# The conformance CI list (hack/conformance-ci.txt): upstream's e2e.test
# against a fresh two-node cluster (the server's node and one joined from a
# network namespace), offline. Every listed test must pass;
# it prints `conformance: N passed, M failed` and the time. It compares with
# and updates a scratch copy of the results file, leaving the checked-in
# results and docs/conformance.md as they are. Four Ginkgo processes: the
# tests mostly wait on pods and the API, so even on two cores four finish
# the list sooner than two (347 s against 456 s end to end, 120 tests).
log "conformance: hack/conformance.sh --list hack/conformance-ci.txt"
cp docs/conformance-results.tsv "$CONFORMANCE_RESULTS"
"$REPO_ROOT/hack/conformance.sh" --list hack/conformance-ci.txt --nodes 2 --procs 4 --no-doc --results "$CONFORMANCE_RESULTS"
