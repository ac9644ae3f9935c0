#!/usr/bin/env bash
# `go test -exec` wrapper of hack/unit.sh when it runs as root: go builds the
# test binary with root's warm build cache, and this runs the binary as
# nobody, so every test that needs root skips itself (internal/testkit/hostcheck)
# the way it would for a developer without root.
#
#   hack/unit-exec.sh TEST_BINARY [ARGS...]
#
# Environment (set by hack/unit.sh): UNIT_DIR, a directory nobody owns that
# holds nobody's own Go build cache (tests that build a helper, such as
# etcdtest's etcd, run `go build` as nobody) and a mount point through which
# nobody reads root's module cache. UNIT_BIN_DIR, if set, receives each test
# binary of which a test skipped, named after its package's directory
# (a/b -> a%b.test), so that hack/test.sh runs those tests again as root
# without linking the binary a second time.
set -euo pipefail
bin=$1
shift
: "${UNIT_DIR:?UNIT_DIR is set by hack/unit.sh}"

# go test leaves the binary in its own 0700 work directory; nobody runs a
# copy in a directory of its own, as go test would for a user (tests may
# write beside their executable).
run_dir=$(mktemp -d "$UNIT_DIR/run.XXXXXX")
trap 'rm -rf "$run_dir"' EXIT
cp "$bin" "$run_dir/"
chown -R nobody:nogroup "$run_dir"

# keep saves the binary when a test skipped (its output says so).
keep() {
  [[ -n "${UNIT_BIN_DIR:-}" ]] && grep -q -- '--- SKIP' "$run_dir/out" || return 0
  # go test runs the binary in its package's directory.
  local repo rel
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  rel=$(realpath --relative-to="$repo" "$PWD")
  ln -f "$bin" "$UNIT_BIN_DIR/${rel//\//%}.test" 2>/dev/null || cp "$bin" "$UNIT_BIN_DIR/${rel//\//%}.test"
}

# Root's module cache sits under /root, which nobody cannot enter: a private
# mount namespace shows it (read-only) at UNIT_DIR/gomodcache, for this
# process tree only. Nothing is downloaded into it (GOPROXY=off): the
# modules go.mod requires are already there. Builds run by tests do not stamp
# VCS data: git refuses nobody a repository root owns.
modcache=$(go env GOMODCACHE)
set +e
unshare --mount --propagation private -- /bin/sh -ec '
  mount --bind "$1" "$2/gomodcache" && mount -o remount,bind,ro "$2/gomodcache"
  shift 2
  exec "$@"
' sh "$modcache" "$UNIT_DIR" \
  setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all -- \
  env HOME="$UNIT_DIR/home" GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false" GOCACHE="$UNIT_DIR/gocache" GOMODCACHE="$UNIT_DIR/gomodcache" GOPROXY=off \
  "$run_dir/$(basename "$bin")" "$@" | tee "$run_dir/out"
status=${PIPESTATUS[0]}
set -e
keep
exit "$status"
