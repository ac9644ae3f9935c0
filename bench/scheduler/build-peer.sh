#!/usr/bin/env bash
# Builds kube-scheduler v1.37.2 into _output/bench/kube-scheduler for
# `go run ./bench/scheduler -peer kube-scheduler` (bench/api/build-peer.sh
# does the work; it skips a binary that is already built).
set -euo pipefail
exec "$(dirname "$0")/../api/build-peer.sh" kube-scheduler
