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

# Only packages with a fuzz target are compiled to list them: listing
# ./... would build every test binary in the repository.
mapfile -t packages < <(git grep --untracked -l -E '^func Fuzz[A-Za-z0-9_]*\(' -- '*_test.go' | xargs -r -n1 dirname | sort -u)

passed=0
failed=0
for dir in "${packages[@]}"; do
  pkg="./$dir"
  if ! listing=$(go test -list '^Fuzz' "$pkg" 2>&1); then
    printf 'FAIL %s: cannot list its fuzz targets\n%s\n' "$pkg" "$listing"
    failed=$((failed + 1))
    continue
  fi
  for name in $(grep -E '^Fuzz' <<<"$listing"); do
    out=$(mktemp)
    # Minimizing each new interesting input may otherwise take up to a
    # minute of the run (the default -fuzzminimizetime): targets whose
    # executions cost milliseconds (a request, a layer) did nothing else.
    if go test -run '^$' -fuzz "^${name}\$" -fuzztime "${fuzz_seconds}s" -fuzzminimizetime 200x "${parallel[@]}" \
      -timeout "$((fuzz_seconds + 600))s" "$pkg" >"$out" 2>&1; then
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
