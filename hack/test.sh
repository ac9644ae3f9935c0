#!/usr/bin/env bash
# The whole test suite: lint, unit and integration tests against real components.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
"$REPO_ROOT/hack/setup.sh"
cd "$REPO_ROOT"

"$REPO_ROOT/hack/lint.sh"

# Missing host prerequisites fail the suite instead of skipping tests.
export BERTH_STRICT_HOST=1
log "go test"
# One package at a time: several packages start whole clusters (berth server
# with its runtime, containerd) that share host-wide resources (the NRI
# socket, the default CNI bridge), and must not run side by side.
go test -p 1 -count=1 -timeout 25m ./...
log "fuzz: every target for 5s"
"$REPO_ROOT/hack/fuzz.sh" 5
"$REPO_ROOT/hack/critest.sh"

# The README's run command, end to end, as a smoke test: a Ready node and the
# example pod Running from locally built images, in a scratch data directory.
log "smoke: hack/run.sh"
SMOKE_DIR=$(mktemp -d /tmp/berth-smoke.XXXXXX)
BERTH_SMOKE=1 BERTH_DATA_DIR="$SMOKE_DIR/data" BERTH_SOCKET_DIR="$SMOKE_DIR/run" BERTH_PORT=16443 \
  "$REPO_ROOT/hack/run.sh" --agent-port 0
rm -rf "$SMOKE_DIR"
