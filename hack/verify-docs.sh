#!/usr/bin/env bash
# Checks the documents that name code: every test docs/features.md cites
# exists in the package it names, and every decision record under docs/adr
# has its Context, Decision and Consequences. Cheap (grep only, nothing is
# compiled), so hack/lint.sh runs it with the other checks.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"

problems=()

# features.md cites tests as `TestName` (package/dir); a name without a
# package, a missing directory or a missing func is a problem.
features=docs/features.md
if [[ ! -f "$features" ]]; then
  problems+=("$features is missing")
else
  while IFS= read -r cite; do
    name=$(sed -E 's/^`([A-Za-z0-9_]+)`.*/\1/' <<<"$cite")
    pkg=$(sed -nE 's/^`[A-Za-z0-9_]+` \(([^)]+)\)$/\1/p' <<<"$cite")
    if [[ -z "$pkg" ]]; then
      problems+=("$features: $name is cited without its package, as \`$name\` (dir)")
    elif [[ ! -d "$pkg" ]]; then
      problems+=("$features: $name: no directory $pkg")
    elif ! grep -qs "^func $name(" "$pkg"/*_test.go; then
      problems+=("$features: no func $name( in $pkg/*_test.go")
    fi
  done < <(grep -oE '`(Test|Fuzz)[A-Za-z0-9_]+`( \([^)]+\))?' "$features")
fi

# Every decision record has the three sections.
shopt -s nullglob
adrs=(docs/adr/[0-9]*.md)
((${#adrs[@]} > 0)) || problems+=("docs/adr holds no records")
for adr in "${adrs[@]}"; do
  for heading in Context Decision Consequences; do
    grep -q "^## $heading\$" "$adr" || problems+=("$adr: no '## $heading' heading")
  done
  grep -qF "($(basename "$adr"))" docs/adr/README.md 2>/dev/null ||
    problems+=("docs/adr/README.md does not link $(basename "$adr")")
done

if ((${#problems[@]} > 0)); then
  printf 'verify-docs: %s\n' "${problems[@]}" >&2
  exit 1
fi
echo "verify-docs: ok"
