#!/usr/bin/env bash
# The footprint a change must report: each executable's size, the idle RSS of
# `berth server --disable-agent` (an embedded etcd, no node), and the peak
# RSS of `berth kubectl version --client`.
#
#   hack/footprint.sh [OUTDIR]   # OUTDIR holds built binaries (default: build into _output)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"
out=${1:-}
if [[ -z "$out" ]]; then
  out=$REPO_ROOT/_output
  "$REPO_ROOT/hack/build.sh" "$out"
fi
for bin in berth berth-runtime berth-monitor; do
  printf '%-14s %12d bytes\n' "$bin" "$(stat -c %s "$out/$bin")"
done

dir=$(mktemp -d /tmp/berth-footprint.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$out/berth" server --disable-agent --data-dir "$dir/data" --bind-address 127.0.0.1 --port "$port" >"$dir/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
ready=""
for _ in $(seq 1 120); do
  if "$out/berth" kubectl --kubeconfig "$dir/data/admin.kubeconfig" get --raw /readyz >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.5
done
[[ -n "$ready" ]] || { echo "berth server was not ready within 60s; its log:"; tail -20 "$dir/server.log"; exit 1; }
# Idle: the start-up work (RBAC bootstrap, caches filled, first GC) is over.
sleep 30
printf '%-34s %6d KiB\n' "berth server --disable-agent, idle" "$(awk '/^VmRSS/ {print $2}' /proc/$pid/status)"
peak=$( { /usr/bin/time -f %M "$out/berth" kubectl version --client >/dev/null; } 2>&1 )
printf '%-34s %6d KiB\n' "berth kubectl version --client" "$peak"
