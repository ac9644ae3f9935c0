#!/usr/bin/env bash
# Checks that what the repository generates is current, regenerating each
# into a temporary directory and comparing it with what is checked in:
#  - the OpenAPI definitions (internal/apiserver/openapi/generated), by the
#    openapi-gen its go:generate line names, which must be the kube-openapi
#    version go.mod requires;
#  - go.mod and go.sum (go mod tidy -diff);
#  - bench/scheduler/default.pgo, a link to cmd/berth/default.pgo;
#  - docs/benchmarks.md's sections, each between the start and end markers
#    the bench programs rewrite;
#  - the differential test's cases (internal/e2e/differential/testdata/
#    cases.json), by hack/tools/differential-cases from upstream's storage data.
# The profile and the benchmark figures are measurements, not derived from
# the source, so only their wiring is checked (hack/pgo.sh and make bench-*
# remake them). Prints a diff and fails on any difference.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

WORK=$(mktemp -d /tmp/berth-verify.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
failed=0
problem() {
  echo "verify: $*" >&2
  failed=1
}

verify_openapi() {
  local dir=internal/apiserver/openapi/generated file=zz_generated.openapi.go line args i pinned want
  line=$(sed -n 's#^//go:generate ##p' "$dir/doc.go")
  read -ra args <<<"$line"
  pinned=$(grep -o 'kube-openapi/cmd/openapi-gen@[^ ]*' <<<"$line" | cut -d@ -f2)
  want=$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)
  [[ "$pinned" == "$want" ]] ||
    problem "$dir/doc.go runs openapi-gen@$pinned, but go.mod requires k8s.io/kube-openapi $want"
  for i in "${!args[@]}"; do
    [[ "${args[$i]}" == --output-dir ]] && args[i + 1]=$WORK/openapi
  done
  log "verify: regenerating $dir/$file"
  (cd "$dir" && "${args[@]}") || { problem "openapi-gen failed"; return; }
  diff -u "$dir/$file" "$WORK/openapi/$file" ||
    problem "$dir/$file is stale: run go generate ./$dir"
}

verify_go_mod() {
  log "verify: go mod tidy -diff"
  go mod tidy -diff || problem "go.mod/go.sum are not tidy: run go mod tidy"
}

verify_pgo_link() {
  local link=bench/scheduler/default.pgo want=../../cmd/berth/default.pgo
  [[ -L "$link" && "$(readlink "$link")" == "$want" ]] ||
    problem "$link must be a symlink to $want (bench/scheduler compiles berth's server with its profile)"
}

verify_bench_markers() {
  local doc=docs/benchmarks.md name starts ends
  for name in $(grep -oE '<!-- bench:[a-z0-9-]+:(start|end) -->' "$doc" | sed -E 's/<!-- bench:(.*):(start|end) -->/\1/' | sort -u); do
    starts=$(grep -c "<!-- bench:$name:start -->" "$doc" || true)
    ends=$(grep -c "<!-- bench:$name:end -->" "$doc" || true)
    ((starts == 1 && ends == 1)) && awk -v s="<!-- bench:$name:start -->" -v e="<!-- bench:$name:end -->" \
      '$0 == s {a = NR} $0 == e {b = NR} END {exit !(a && b && a < b)}' "$doc" ||
      problem "$doc: section $name needs one start marker and, after it, one end marker"
  done
}

verify_differential_cases() {
  local file=internal/e2e/differential/testdata/cases.json
  log "verify: regenerating $file"
  go run -tags upstream ./hack/tools/differential-cases >"$WORK/cases.json" || { problem "hack/tools/differential-cases failed"; return; }
  diff -u "$file" "$WORK/cases.json" ||
    problem "$file is stale: run go run -tags upstream ./hack/tools/differential-cases > $file"
}

verify_openapi
verify_differential_cases
verify_go_mod
verify_pgo_link
verify_bench_markers
((failed == 0)) || exit 1
echo "verify: ok"
