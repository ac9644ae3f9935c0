#!/usr/bin/env bash
# Builds berth and runs a single-node cluster in the foreground (Ctrl-C stops it).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
"$REPO_ROOT/hack/setup.sh"
exec "$BERTH_BIN" server "$@"
