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

# fuzz_target PKG NAME OUT fuzzes one target, its output in OUT.
fuzz_target() {
  go test -run '^$' -fuzz "^${2}\$" -fuzztime "${fuzz_seconds}s" -fuzzminimizetime 200x "${parallel[@]}" \
    -timeout "$((fuzz_seconds + 600))s" "$1" >"$3" 2>&1
}

passed=0
failed=0
for dir in "${packages[@]}"; do
  pkg="./$dir"
  for name in $(fuzz_targets "$dir"); do
    out=$(mktemp)
    # Minimizing each new interesting input may otherwise take up to a
    # minute of the run (the default -fuzzminimizetime): targets whose
    # executions cost milliseconds (a request, a layer) did nothing else.
    # Go's fuzzing engine can itself report "context deadline exceeded" when
    # -fuzztime ends while a worker is still busy; that is no finding (a real
    # one always writes its failing input), so such a run is tried once more.
    if fuzz_target "$pkg" "$name" "$out" ||
      { grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out" &&
        echo "RETRY $pkg $name: the engine ran past its deadline without a failing input" &&
        fuzz_target "$pkg" "$name" "$out"; }; then
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
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
