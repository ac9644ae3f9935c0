#!/usr/bin/env bash
# Regenerates cmd/berth/default.pgo, the CPU profile `go build` uses for
# profile-guided optimisation of berth (its default -pgo=auto reads
# default.pgo beside the main package; bench/scheduler links the same file,
# since it compiles berth's server into itself). The profile is berth
# server's own work under the repository's benchmarks: pod creates, binds,
# watches and status updates of bench/api's two shapes, and bench/scheduler's
# creation-to-binding run. Run it from a quiet machine after changes that
# move where the server spends its time; PGO tolerates a stale profile (it
# only steers inlining and devirtualisation), so this is not part of builds.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/api"
go run ./bench/api --shape both --runs 1 --peer=false --out "" --profile-dir "$work/api"
go run ./bench/scheduler -out "" -cpuprofile "$work/scheduler.pprof"
go tool pprof -proto "$work"/api/*cpu.pprof "$work/scheduler.pprof" > "$work/default.pgo"
mv "$work/default.pgo" cmd/berth/default.pgo
ls -l cmd/berth/default.pgo
