#!/usr/bin/env bash
# Static checks, run by `make lint` and first by `make test`: gofmt, go vet,
# staticcheck, hack/tools/pollcheck (no hand-rolled polls in tests: they wait
# through internal/testkit/wait) and hack/verify-docs.sh (the tests
# docs/features.md names exist, the decision records have their sections).
#
#   hack/lint.sh [PACKAGES...]   # go vet and staticcheck on PACKAGES (default ./...)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
one_build_config
cd "$REPO_ROOT"

packages=("$@")
((${#packages[@]} > 0)) || packages=(./...)

# Installs the pinned staticcheck only when it is missing (hack/setup.sh
# has already done so under make test).
go_tool staticcheck "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"

log "lint: gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n "$unformatted" ]]; then
  echo "gofmt needed on:"
  echo "$unformatted"
  exit 1
fi
log "lint: go vet"
go vet "${packages[@]}"
log "lint: staticcheck"
"$TOOLS_DIR/staticcheck" "${packages[@]}"
log "lint: pollcheck"
go run ./hack/tools/pollcheck
log "lint: docs"
"$REPO_ROOT/hack/verify-docs.sh"
