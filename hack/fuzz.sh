#!/usr/bin/env bash
# Runs every Go fuzz target in the repository, one at a time (go test fuzzes
# one target per invocation), for SECONDS each (default 60).
#
#   hack/fuzz.sh [SECONDS]
#
# Prints one line per target and a final "N passed, N failed"; exits non-zero
# if any target failed. A crashing input is written by go test under the
# package's testdata/fuzz/<Target>/; commit it with the fix as a regression
# seed. FUZZ_PARALLEL, when set, is passed as -parallel (fuzzing workers).
# FUZZ_SKIP, when set, is an extended regular expression of package
# directories (internal/apiserver) whose targets are listed as skipped, not
# fuzzed; go test still runs their seed corpus as tests.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

fuzz_seconds=${1:-60}
if ! [[ "$fuzz_seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [SECONDS]" >&2
  exit 2
fi
parallel=()
if [[ -n "${FUZZ_PARALLEL:-}" ]]; then parallel=(-parallel "$FUZZ_PARALLEL"); fi

# The targets are read from the source, not listed by `go test -list`:
# listing links each package's test binary once more than fuzzing does
# (about 40 s for internal/apiserver's on 2 cores).
mapfile -t packages < <(git grep --untracked -l -E '^func Fuzz[A-Za-z0-9_]*\(' -- '*_test.go' | xargs -r -n1 dirname | sort -u)

# fuzz_targets DIR: the fuzz target names in DIR's own test files (the
# glob pathspec keeps `*` from matching subdirectories).
fuzz_targets() {
  git grep --untracked -h -o -E '^func Fuzz[A-Za-z0-9_]*\(' -- ":(glob)$1/*_test.go" | sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(/\1/' | sort -u
}

# fuzz_target PKG NAME OUT BUDGET fuzzes one target for BUDGET (a -fuzztime:
# a duration, or a count of executions such as 5000x), its output in OUT.
fuzz_target() {
  go test -run '^$' -fuzz "^${2}\$" -fuzztime "$4" -fuzzminimizetime 200x "${parallel[@]}" \
    -timeout "$((fuzz_seconds + 600))s" "$1" >"$3" 2>&1
}

# deadline_race OUT: the run in OUT failed only on Go's fuzzing coordinator
# race at the end of a timed -fuzztime (go.dev/issue/75804, fixed in Go
# 1.27): the bare "context deadline exceeded" failure, with no failing input
# written. A real finding always writes its input.
deadline_race() {
  grep -qx '    context deadline exceeded' "$1" && ! grep -q 'Failing input written' "$1"
}

# execs_reached OUT: the executions the run in OUT had reached (at least 100).
execs_reached() {
  local n
  n=$(grep -oE 'execs: [0-9]+' "$1" | tail -n 1 | grep -oE '[0-9]+' || true)
  echo $((${n:-0} > 100 ? ${n:-0} : 100))
}

passed=0
failed=0
skipped=0
for dir in "${packages[@]}"; do
  pkg="./$dir"
  for name in $(fuzz_targets "$dir"); do
    if [[ -n "${FUZZ_SKIP:-}" && "$dir" =~ $FUZZ_SKIP ]]; then
      printf 'SKIP %s %s: FUZZ_SKIP=%s\n' "$pkg" "$name" "$FUZZ_SKIP"
      skipped=$((skipped + 1))
      continue
    fi
    out=$(mktemp)
    # -fuzzminimizetime is 200x: minimizing each new interesting input may
    # otherwise take up to a minute of the run (the default), and targets
    # whose executions cost milliseconds (a request, a layer) did nothing
    # else. After the coordinator's deadline race the target is fuzzed again
    # for as many executions as the timed run reached: a count budget has no
    # deadline to race, and the target is still fuzzed, not passed unrun.
    if fuzz_target "$pkg" "$name" "$out" "${fuzz_seconds}s" ||
      { deadline_race "$out" && budget="$(execs_reached "$out")x" &&
        echo "RETRY $pkg $name: Go's fuzzing deadline race (go.dev/issue/75804), fuzzing again for $budget" &&
        fuzz_target "$pkg" "$name" "$out" "$budget"; }; then
      printf 'PASS %s %s: %s\n' "$pkg" "$name" "$(grep -E '^fuzz: elapsed' "$out" | tail -n 1)"
      passed=$((passed + 1))
    else
      printf 'FAIL %s %s\n' "$pkg" "$name"
      tail -n 40 "$out" | sed 's/^/    /'
      failed=$((failed + 1))
    fi
    rm -f "$out"
  done
done
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
