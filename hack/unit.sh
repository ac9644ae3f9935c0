#!/usr/bin/env bash
# Unit tests: every package's tests that need neither root nor a cluster, as a
# user without root (started as root, it builds as root and runs each test
# binary as nobody through hack/unit-exec.sh). Tests that need root skip
# themselves (internal/testkit/hostcheck); the packages all of whose tests
# need root are listed in hack/unit-exclude.txt and not run. Fails if another
# package skips every test. Prints how many tests ran.
#
#   hack/unit.sh [GO TEST FLAGS...]   # e.g. hack/unit.sh -run TestList
#
# UNIT_SKIPPED_OUT, if set, names a file that receives "PACKAGE TEST" for
# every top-level test that skipped itself or a subtest (hack/test.sh runs
# those again as root).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
one_build_config
cd "$REPO_ROOT"

EXCLUDE=hack/unit-exclude.txt
module=$(go list -m)
mapfile -t excluded < <(grep -v '^#' "$EXCLUDE" | awk 'NF {print $1}')
for dir in "${excluded[@]}"; do
  [[ -d "$dir" ]] || { echo "unit.sh: $EXCLUDE lists $dir, which does not exist" >&2; exit 1; }
done
mapfile -t packages < <(go list ./... | grep -vxF -f <(printf "$module/%s\n" "${excluded[@]}"))

# Missing host prerequisites skip here: BERTH_STRICT_HOST=1, which make test
# sets for its root pass, would fail every test that needs root.
unset BERTH_STRICT_HOST
exec_flags=()
if ((EUID == 0)); then
  # Kept between runs: nobody's own build cache, warm after the first run.
  export UNIT_DIR="$OUT_DIR/unit"
  mkdir -p "$UNIT_DIR/gocache" "$UNIT_DIR/gomodcache" "$UNIT_DIR/home"
  chown nobody:nogroup "$UNIT_DIR" "$UNIT_DIR/gocache" "$UNIT_DIR/home"
  exec_flags=(-exec "$REPO_ROOT/hack/unit-exec.sh")
  # Tests fetch Debian's busybox into the tools directory once
  # (images.FetchDebianBusybox); until one has, nobody may write there.
  mkdir -p "$TOOLS_DIR/debian-busybox"
  [[ -e "$TOOLS_DIR/debian-busybox/root" ]] || chown nobody:nogroup "$TOOLS_DIR/debian-busybox"
fi

# -parallel 8: tests marked parallel mostly wait on their embedded etcd
# (fsync, election), not on the CPU, so more of them than cores overlap well.
# -p 4: go test's default (one per core) counts a running test binary as
# busy as a link, so two binaries waiting on etcd would hold both slots
# while the links behind them wait; four lets links go on beside them, and
# caps the links at once (up to ~2 GB each) at four.
log "unit: ${#packages[@]} packages (${#excluded[@]} more excluded by $EXCLUDE)"
go test -json -count=1 -timeout 10m -p 4 -parallel 8 "${exec_flags[@]}" "$@" "${packages[@]}" 2>&1 |
  python3 hack/unit-report.py "$EXCLUDE" "$module" ${UNIT_SKIPPED_OUT:+"$UNIT_SKIPPED_OUT"}
